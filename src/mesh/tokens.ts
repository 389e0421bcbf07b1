import ipaddr from "ipaddr.js";
import type { PortRange } from "../redirect/spec.js";

/**
 * Parsers for the user-written tokens that end up in iptables rules. Each returns the
 * parsed value or a reason; only these values ever reach restore text.
 */
export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const portPattern = /^\d{1,5}$/;

function parsePortNumber(text: string): number | undefined {
  if (!portPattern.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/** `8080` or `8000-8010` (as in Linkerd's annotations), ports 1..65535, ranges ordered. */
export function parsePortToken(token: string | number): Parsed<PortRange> {
  const text = String(token).trim();
  const bounds = text.split("-");
  if (bounds.length > 2) return { ok: false, reason: "expected a port or a range like 8000-8010" };
  const [from, to] = bounds.map(parsePortNumber);
  if (from === undefined || (bounds.length === 2 && to === undefined)) {
    return { ok: false, reason: "ports are whole numbers from 1 to 65535" };
  }
  if (to !== undefined && to < from) return { ok: false, reason: "a range must run from low to high" };
  return { ok: true, value: { from, to: to ?? from } };
}

export function parsePortNumberToken(token: string | number): Parsed<number> {
  const port = parsePortNumber(String(token).trim());
  return port === undefined ? { ok: false, reason: "ports are whole numbers from 1 to 65535" } : { ok: true, value: port };
}

/**
 * A CIDR as given (trimmed), validated as linkerd-cni validates it (Go's ParseCIDR: a
 * prefix length is required, host bits may be set): the rule's comment keeps it so, the
 * rule's `-s` is its network (see redirect/cidr.ts).
 */
export function parseSubnetToken(token: string): Parsed<string> {
  const failure = { ok: false, reason: "expected a CIDR like 10.0.0.0/8 or fd00::/64 (a prefix length is required)" } as const;
  const text = token.trim();
  const [addressText = "", prefixText, ...extra] = text.split("/");
  // isValidFourPartDecimal refuses inet_aton shorthands such as "10.1".
  const kind = ipaddr.IPv4.isValidFourPartDecimal(addressText)
    ? "ipv4"
    : ipaddr.IPv6.isValid(addressText) && !addressText.includes("%")
      ? "ipv6"
      : undefined;
  if (kind === undefined || extra.length > 0 || prefixText === undefined) return failure;
  const maxPrefix = kind === "ipv4" ? 32 : 128;
  // No leading zeros: iptables refuses a prefix such as "08", as it would an address part.
  if (!(/^(0|[1-9]\d{0,2})$/.test(prefixText) && Number(prefixText) <= maxPrefix)) return failure;
  return { ok: true, value: text };
}

const maxId = 4294967294; // (uid_t)-1 means "no change" to the kernel

/** A numeric UID or GID; names are refused so no NSS lookup ever runs. */
export function parseIdToken(token: string | number): Parsed<number> {
  const text = String(token).trim();
  if (!/^\d{1,10}$/.test(text) || Number(text) > maxId) {
    return { ok: false, reason: `expected a numeric id from 0 to ${maxId}` };
  }
  return { ok: true, value: Number(text) };
}

/**
 * The most entries one annotation may list. Any user who may create a pod writes its
 * annotations, and each entry becomes a rule that root writes and the agent reads back and
 * audits every sweep: unbounded, one pod's 256 KiB of CIDRs (18,000 rules) stalled the node's
 * audit. A thousand is far past what a skip list holds, and keeps a pod's record under 200 KB.
 */
export const maxAnnotationTokens = 1000;

/** Splits a comma-separated annotation value; blank tokens (a trailing comma) carry nothing. */
export function splitList(value: string): string[] {
  return value
    .split(",")
    .map((token) => token.trim())
    .filter((token) => token !== "");
}
