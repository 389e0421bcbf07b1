import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import pRetry, { AbortError } from "p-retry";
import { errorMessage } from "../errors.js";
import { describeApiFailure } from "./errors.js";
import { loadApiAccess } from "./kubeconfig.js";

/** The plugin's two reads: the pod being added and, for overrides, its namespace. */
export interface KubeReader {
  readPod(namespace: string, name: string): Promise<V1Pod>;
  readNamespace(name: string): Promise<V1Namespace>;
  /** The port of the API server the kubeconfig points at. */
  serverPort: number;
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

  function get<T>(path: string, signal: AbortSignal): Promise<T> {
    return new Promise((resolve, reject) => {
      const send = secure ? httpsRequest : httpRequest;
      const req = send(
        new URL(path, access.server),
        { agent, signal, headers: { Accept: "application/json", ...(access.token ? { Authorization: `Bearer ${access.token}` } : {}) } },
        (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (body += chunk));
          res.on("error", reject);
          res.on("end", () => {
            try {
              if (res.statusCode === 200) resolve(JSON.parse(body) as T);
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

  async function read<T>(path: string): Promise<T> {
    let lastCause = "";
    return pRetry(
      async () => {
        const signal = AbortSignal.any([options.deadline, AbortSignal.timeout(options.attemptTimeoutMs)]);
        try {
          return await get<T>(path, signal);
        } catch (error) {
          const failure = describeApiFailure(error);
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
    serverPort: Number(access.server.port || (secure ? 443 : 80)),
    readPod: (namespace, name) => read<V1Pod>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`),
    readNamespace: (name) => read<V1Namespace>(`/api/v1/namespaces/${encodeURIComponent(name)}`),
    close: () => agent.destroy(),
  };
}
