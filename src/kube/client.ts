import { readFileSync } from "node:fs";
import { CoreV1Api, KubeConfig, Observable, type ObservableMiddleware, type V1Namespace, type V1Pod } from "@kubernetes/client-node";
import pRetry, { AbortError } from "p-retry";
import { describeApiFailure } from "./errors.js";

/** A kubeconfig that could not be used, before any request was sent. */
export class KubeconfigError extends Error {}

export interface KubeReader {
  readPod(namespace: string, name: string): Promise<V1Pod>;
  readNamespace(name: string): Promise<V1Namespace>;
  /** The port of the API server the kubeconfig points at. */
  serverPort: number;
}

export interface KubeReaderOptions {
  kubeconfig: string;
  /** The overall deadline for every request and retry made through this reader. */
  deadline: AbortSignal;
  attemptTimeoutMs: number;
  onRetry?: (attempt: number, cause: string) => void;
}

/** Thrown when every attempt failed; `cause` reads like describeApiFailure's. */
export class ApiRequestError extends Error {}

export function loadKubeconfig(path: string): KubeConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new KubeconfigError(`cannot read kubeconfig ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const config = new KubeConfig();
  try {
    config.loadFromString(text);
  } catch (error) {
    throw new KubeconfigError(`cannot parse kubeconfig ${path}: ${(error as Error).message}`);
  }
  const cluster = config.getCurrentCluster();
  if (!cluster?.server) throw new KubeconfigError(`kubeconfig ${path} names no current cluster with a server`);
  const user = config.getCurrentUser();
  if (!user?.token && !user?.authProvider && !user?.exec && !user?.certFile && !user?.certData) {
    throw new KubeconfigError(`kubeconfig ${path} has no credentials for its current user`);
  }
  return config;
}

export function createKubeReader(options: KubeReaderOptions): KubeReader {
  const config = loadKubeconfig(options.kubeconfig);
  const api = config.makeApiClient(CoreV1Api);
  const server = new URL(config.getCurrentCluster()!.server);

  async function request<T>(call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    let lastCause = "";
    return pRetry(
      async () => {
        const signal = AbortSignal.any([options.deadline, AbortSignal.timeout(options.attemptTimeoutMs)]);
        try {
          return await call(signal);
        } catch (error) {
          const failure = describeApiFailure(error);
          lastCause = failure.cause;
          if (!failure.retryable || options.deadline.aborted) throw new AbortError(failure.cause);
          throw new ApiRequestError(failure.cause);
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
      if (!options.deadline.aborted) throw new ApiRequestError((error as Error).message);
      const cause = lastCause && !lastCause.startsWith("timed out") ? ` (last failure: ${lastCause})` : "";
      throw new ApiRequestError(`timed out waiting for the API server${cause}`);
    });
  }

  /** Hands each request our abort signal through the client's middleware hook. */
  const withSignal = (signal: AbortSignal) => {
    const middleware: ObservableMiddleware = {
      pre: (context) => (context.setSignal(signal), new Observable(Promise.resolve(context))),
      post: (response) => new Observable(Promise.resolve(response)),
    };
    return { middleware: [middleware], middlewareMergeStrategy: "append" as const };
  };

  return {
    serverPort: Number(server.port || (server.protocol === "https:" ? 443 : 80)),
    readPod: (namespace, name) => request((signal) => api.readNamespacedPod({ namespace, name }, withSignal(signal))),
    readNamespace: (name) => request((signal) => api.readNamespace({ name }, withSignal(signal))),
  };
}
