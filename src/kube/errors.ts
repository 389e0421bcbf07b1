/** How an API failure reads in a CNI error, and whether another try may help. */
export interface ApiFailure {
  cause: string;
  retryable: boolean;
}

const statusCauses: Record<number, string> = {
  401: "401 Unauthorized: the API server refused the kubeconfig's credentials (expired or rotated token?)",
  403: "403 Forbidden: the kubeconfig's user may not read this object (check meshcni's RBAC)",
  404: "404 Not Found",
};

const tlsCodes = /CERT|SELF_SIGNED|TLS|SSL|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/i;

/** Classifies what @kubernetes/client-node (or its fetch) threw. */
export function describeApiFailure(error: unknown): ApiFailure {
  const failure = error as { code?: unknown; name?: string; message?: string; cause?: { code?: unknown; message?: string } };
  if (typeof failure?.code === "number") {
    const status = failure.code;
    return {
      cause: statusCauses[status] ?? `HTTP ${status} from the API server`,
      // 429 and 5xx are the server's passing trouble; other 4xx answers will not change.
      retryable: status === 429 || status >= 500,
    };
  }
  if (failure?.name === "AbortError" || failure?.name === "TimeoutError") {
    return { cause: "timed out waiting for the API server", retryable: true };
  }
  const code = String(failure?.code ?? failure?.cause?.code ?? "");
  const message = failure?.message ?? String(error);
  if (tlsCodes.test(code) || tlsCodes.test(message)) return { cause: `TLS: ${message}`, retryable: false };
  return { cause: code ? `${code}: ${message}` : message, retryable: true };
}
