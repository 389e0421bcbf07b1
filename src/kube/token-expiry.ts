/**
 * Why the API server refused a bearer token (401) when the token itself says it: its `exp`
 * claim passed on this node's clock. Read without checking the signature (only the server
 * can); undefined when it is no JWT, has no `exp`, or has not expired.
 */
export function expiredTokenCause(token: string | undefined, nowMs: number): string | undefined {
  const payload = token?.split(".")[1];
  if (!payload) return undefined;
  let exp: unknown;
  try {
    exp = (JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { exp?: unknown }).exp;
  } catch {
    return undefined;
  }
  if (typeof exp !== "number" || !Number.isFinite(exp) || exp * 1000 > nowMs) return undefined;
  const ago = Math.round(nowMs / 1000 - exp);
  return (
    `401 Unauthorized: the kubeconfig's token expired at ${new Date(exp * 1000).toISOString()} (${ago} s ago): ` +
    "meshcni's agent renews it while it runs on this node; is it running?"
  );
}
