import { errorMessage } from "../errors.js";
import type { Readiness } from "../installer/readiness.js";
import type { AgentOptions } from "./options.js";

/** What the agent's /readyz answered, or why it could not be asked. */
export type AgentVerdict = { ready: boolean; cause: string | undefined } | { unreachable: string };

/** A hung agent must not hang the command: it answers /readyz from memory, in milliseconds. */
const readyzTimeoutMs = 2000;

/** Where the agent's /readyz is, asked from the same host: an address it listens on every address of is asked on loopback. */
export function readyzUrl(listen: NonNullable<AgentOptions["listen"]>): string {
  const host = listen.host === "" || listen.host === "0.0.0.0" ? "127.0.0.1" : listen.host === "::" ? "::1" : listen.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${listen.port}/readyz`;
}

/** Asks the agent's /readyz: 200 ready, 503 not ready with its cause's word; anything else is no answer. */
export async function askReadyz(url: string): Promise<AgentVerdict> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(readyzTimeoutMs) });
    const body = await response.text();
    if (response.status === 200) return { ready: true, cause: undefined };
    if (response.status === 503) return { ready: false, cause: /^not ready: (\w+)/.exec(body)?.[1] };
    return { unreachable: `it answered HTTP ${response.status}` };
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    return { unreachable: errorMessage(cause instanceof Error ? cause : error) };
  }
}

/**
 * `meshcni ready`'s answer: the agent's verdict (what /readyz says, so the two never
 * disagree), explained by what the disk shows from here; the disk alone when the agent
 * serves no /readyz (--listen ""). Pure.
 */
export function readyReport(verdict: AgentVerdict | undefined, disk: Readiness, url: string): { ready: boolean; text: string } {
  const diskReasons = disk.reasons.join("; ");
  if (!verdict)
    return disk.ready
      ? { ready: true, text: `ready: meshcni is chained ${disk.chainedBy ?? `in ${disk.active}`}` }
      : { ready: false, text: `not ready: ${diskReasons}` };
  if ("unreachable" in verdict) {
    const also = disk.ready ? "" : `; ${diskReasons}`;
    return { ready: false, text: `not ready: no agent answers at ${url} (${verdict.unreachable})${also}` };
  }
  if (verdict.ready) {
    const differs = disk.ready ? "" : `\nthe agent is ready, but from here: ${diskReasons} (are the flags the agent's?)`;
    return { ready: true, text: `ready: meshcni is chained ${disk.chainedBy ?? `in ${disk.active ?? "the active config"}`}${differs}` };
  }
  const cause = verdict.cause ?? "NotReady";
  const why =
    !disk.ready && disk.cause === cause
      ? diskReasons
      : `the agent's log and its Node's MeshcniReady condition say why${disk.ready ? "" : ` (from here: ${diskReasons})`}`;
  return { ready: false, text: `not ready (${cause}): ${why}` };
}
