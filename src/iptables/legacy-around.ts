import { readFileSync } from "node:fs";
import type { Backend } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import { groupedBy, jumpTarget, type NatTable, type SavedRule } from "../redirect/table.js";
import { binaryName } from "./binaries.js";
import { checkedSave } from "./exec.js";
import { parseSavedTable } from "./save.js";

/** The hooks whose chains see a pod's connections before its redirect does. */
const entryChains = ["PREROUTING", "OUTPUT"];

/** Whether a rule can match TCP: no protocol, `-p tcp`, or `! -p` another. */
const tcpOrAny = (rule: SavedRule) => {
  const at = rule.args.indexOf("-p");
  if (at < 0) return true;
  const tcp = rule.args[at + 1] === "tcp";
  return rule.args[at - 1] === "!" ? !tcp : tcp;
};
const untracks = (rule: SavedRule) => jumpTarget(rule) === "NOTRACK" || (jumpTarget(rule) === "CT" && rule.args.includes("--notrack"));
const rewrites = (rule: SavedRule) => ["DNAT", "REDIRECT"].includes(jumpTarget(rule) ?? "");

/** Rules of a saved table reached from PREROUTING or OUTPUT (through -j and -g) that `matters` takes, as `-A` lines, pure. */
export function reachedRules(table: NatTable, matters: (rule: SavedRule) => boolean): string[] {
  // By chain once: a pod can fill its own tables, and the walk must stay linear in the rules.
  const byChain = groupedBy(table.rules, (rule) => rule.chain);
  const reached = new Set(entryChains);
  for (const chain of reached)
    for (const rule of byChain.get(chain) ?? []) {
      const at = rule.args.findIndex((token) => token === "-j" || token === "-g");
      const next = at >= 0 ? rule.args[at + 1] : undefined;
      if (next && table.chains.has(next)) reached.add(next);
    }
  return table.rules
    .filter((rule) => reached.has(rule.chain) && tcpOrAny(rule) && matters(rule))
    .map((rule) => `-A ${rule.chain} ${rule.text}`);
}

/**
 * The legacy x_tables this thread's netns holds (`/proc/thread-self/net`: the netns it
 * entered, not the process's): none until something used them there, so most pods cost no
 * process at all.
 */
function legacyTables(family: Family): string[] {
  try {
    return readFileSync(`/proc/thread-self/net/${family === "ipv4" ? "ip" : "ip6"}_tables_names`, "utf8")
      .split("\n")
      .filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * What in iptables-legacy's tables of the netns the caller is in lets TCP past a redirect
 * held by `backend`: untracked TCP in its raw table, whatever the backend; NAT in its nat
 * table before meshcni's, unless meshcni's own rules are there (legacy, or plain, which may be).
 * nf_tables cannot list these: only iptables-legacy-save can, run only for a table there.
 */
export async function legacyBypasses(
  backend: Backend,
  families: Family[],
  tables = legacyTables,
  save: (binary: string, args: string[]) => Promise<string> = checkedSave,
): Promise<string[]> {
  const found: string[] = [];
  for (const family of families) {
    const present = tables(family);
    const binary = binaryName("legacy", family, "save");
    if (present.includes("raw"))
      for (const line of reachedRules(parseSavedTable(await save(binary, ["-t", "raw"]), "raw"), untracks))
        found.push(`${family}: untracked TCP never reaches the redirect: iptables-legacy raw: ${line}`);
    if (present.includes("nat") && (backend === "nft" || backend === "nftables"))
      for (const line of reachedRules(parseSavedTable(await save(binary, ["-t", "nat"]), "nat"), rewrites))
        found.push(`${family}: NAT that runs before the redirect lets traffic bypass the proxy: iptables-legacy nat: ${line}`);
  }
  return found;
}

/** Whether this thread's netns holds any iptables-legacy table, of either family: rules nf_tables' generation does not count. */
export const holdsLegacyTables = (tables = legacyTables) => tables("ipv4").length > 0 || tables("ipv6").length > 0;
