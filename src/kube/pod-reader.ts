import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import pRetry, { AbortError } from "p-retry";
import { errorMessage } from "../errors.js";
import { AnswerError, namespaceAnswer, podAnswer, serviceAnswer } from "./answers.js";
import { describeApiFailure } from "./errors.js";
import { loadApiAccess } from "./kubeconfig.js";
import { expiredTokenCause } from "./token-expiry.js";

/** An answer larger than this is refused: an object in etcd is at most 1.5 MiB by default. */
const maxAnswerBytes = 4 << 20;

/** The plugin's reads: the pod being added, for overrides its namespace, for a control-plane pod the `kubernetes` Service. */
export interface KubeReader {
  /** The pod; `uid` (the runtime's K8S_POD_UID) lets a cache tell a recreated pod from the one asked for. */
  readPod(namespace: string, name: string, uid?: string): Promise<V1Pod>;
  readNamespace(name: string): Promise<V1Namespace>;
  readService(namespace: string, name: string): Promise<V1Service>;
  /** Closes kept-alive connections, so the plugin process can exit at once. */
  close(): void;
}

export interface KubeReaderOptions {
  kubeconfig: string;
  /** The overall deadline for every request and retry made through this reader. */
  deadline: AbortSignal;
  attemptTimeoutMs: number;
  onRetry?: (attempt: number, cause: string) => void;
}

/** Every attempt at one API path failed; the message reads like describeApiFailure's cause. */
export class ApiRequestError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiRequestError";
  }
}

/** An API answer other than 200, shaped as describeApiFailure reads it. */
class StatusError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export async function createKubeReader(options: KubeReaderOptions): Promise<KubeReader> {
  const access = await loadApiAccess(options.kubeconfig);
  const secure = access.server.protocol === "https:";
  // One kept-alive connection: the namespace read reuses the pod read's TLS session.
  const agent = secure
    ? new HttpsAgent({
        keepAlive: true,
        maxSockets: 1,
        rejectUnauthorized: !access.insecure,
        ...(access.ca ? { ca: access.ca } : {}),
        ...(access.cert && access.key ? { cert: access.cert, key: access.key } : {}),
        ...(access.serverName ? { servername: access.serverName } : {}),
      })
    : new HttpAgent({ keepAlive: true, maxSockets: 1 });

  function get(path: string, signal: AbortSignal): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const send = secure ? httpsRequest : httpRequest;
      const req = send(
        new URL(path, access.server),
        { agent, signal, headers: { Accept: "application/json", ...(access.token ? { Authorization: `Bearer ${access.token}` } : {}) } },
        (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            body += chunk;
            if (body.length > maxAnswerBytes)
              req.destroy(new AnswerError(`the API server's answer is larger than ${maxAnswerBytes >> 20} MiB`));
          });
          res.on("error", reject);
          res.on("end", () => {
            try {
              if (res.statusCode === 200) resolve(JSON.parse(body));
              else reject(new StatusError(res.statusCode ?? 0, (JSON.parse(body) as { message?: string }).message ?? body));
            } catch (error) {
              reject(res.statusCode === 200 ? error : new StatusError(res.statusCode ?? 0, body));
            }
          });
        },
      );
      req.on("error", reject);
      req.end();
    });
  }

  /** GETs a path and checks the answer, retrying what may pass within the deadline. */
  async function read<T>(path: string, check: (body: unknown) => T): Promise<T> {
    let lastCause = "";
    return pRetry(
      async () => {
        const signal = AbortSignal.any([options.deadline, AbortSignal.timeout(options.attemptTimeoutMs)]);
        try {
          return check(await get(path, signal));
        } catch (error) {
          if (error instanceof AnswerError) throw new AbortError(error.message);
          const failure = describeApiFailure(error);
          if (error instanceof StatusError && error.code === 401)
            failure.cause = expiredTokenCause(access.token, Date.now()) ?? failure.cause;
          lastCause = failure.cause;
          if (!failure.retryable || options.deadline.aborted) throw new AbortError(failure.cause);
          throw new ApiRequestError(path, failure.cause);
        }
      },
      {
        retries: 4,
        minTimeout: 100,
        factor: 3,
        signal: options.deadline,
        onFailedAttempt: ({ error, attemptNumber }) => options.onRetry?.(attemptNumber, error.message),
      },
    ).catch((error: unknown) => {
      if (!options.deadline.aborted) throw new ApiRequestError(path, errorMessage(error));
      const cause = lastCause && !lastCause.startsWith("timed out") ? ` (last failure: ${lastCause})` : "";
      throw new ApiRequestError(path, `timed out waiting for the API server${cause}`);
    });
  }

  return {
    readPod: (namespace, name) =>
      read(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`, (body) =>
        podAnswer(body, namespace, name),
      ),
    readNamespace: (name) => read(`/api/v1/namespaces/${encodeURIComponent(name)}`, (body) => namespaceAnswer(body, name)),
    readService: (namespace, name) =>
      read(`/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(name)}`, (body) =>
        serviceAnswer(body, namespace, name),
      ),
    close: () => agent.destroy(),
  };
}
