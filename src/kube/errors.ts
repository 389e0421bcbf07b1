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

/**
 * A request the API server answered with an error: its HTTP code, the Status's message
 * (never client-node's dump of the whole exchange), its causes' reasons (DisruptionBudget…)
 * and its Retry-After.
 */
export class ApiStatusError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly retryAfterMs: number | undefined,
    readonly causes: string[] = [],
  ) {
    super(message);
    this.name = "ApiStatusError";
  }
}

/** Whether the API server answered 404 Not Found (client-node's error, or ours). */
export const isNotFound = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === 404;

/** Retry-After in seconds (what the API server sends), as milliseconds. */
export function retryAfterMs(value: string | null | undefined): number | undefined {
  const seconds = value ? Number(value) : Number.NaN;
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/** The message and the causes' reasons of a Status body (JSON text or parsed), or the code when it is no Status. */
export function statusMessage(code: number, body: unknown): { message: string; causes: string[] } {
  let status = body;
  if (typeof body === "string") {
    try {
      status = JSON.parse(body);
    } catch {
      status = undefined;
    }
  }
  const { message, details } = (status ?? {}) as { message?: unknown; details?: { causes?: Array<{ reason?: string; type?: string }> } };
  return {
    message: typeof message === "string" && message ? message : `HTTP ${code} from the API server`,
    causes: (details?.causes ?? []).flatMap((cause) => cause.reason ?? cause.type ?? []),
  };
}

/** What client-node's generated API threw, as an ApiStatusError (its Status's message and causes, its Retry-After); anything else as it is. */
export function apiError(error: unknown): unknown {
  const failure = error as { code?: unknown; body?: unknown; headers?: Record<string, string> } | null;
  if (error instanceof ApiStatusError || typeof failure?.code !== "number" || !("body" in (failure ?? {}))) return error;
  const { message, causes } = statusMessage(failure.code, failure.body);
  return new ApiStatusError(failure.code, message, retryAfterMs(failure.headers?.["retry-after"]), causes);
}
