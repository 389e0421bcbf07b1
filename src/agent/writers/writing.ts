import { join } from "node:path";
import type { WriteAsk } from "../../applier/contract.js";
import type { NetnsLook } from "../../audit/netns-look.js";
import { hostPaths } from "../../host.js";
import type { Template } from "../../installer/template.js";
import { type Logger, SaidOnce } from "../../log.js";
import type { AgentMetrics } from "../metrics.js";
import type { AddsWritten } from "../sweeps/adds-written.js";
import { type NetnsTie, netnsTie } from "./netns-tie.js";
import { NothingWritten } from "./nothing-written.js";
import { type WriteScope, writeScopeOf } from "./write-scope.js";
import { AgentWriter, type WriteOutcome, WriterPool } from "./writer.js";

/** Where the agent carries out ADD's decisions and DELs (its writer), or nothing: the plugin then writes. */
export interface Writing {
  hostRoot: string;
  /** The paths its writers keep to (write-scope.ts). */
  scope: WriteScope;
  write(ask: WriteAsk, deadline: number): Promise<WriteOutcome>;
  /** Why an ADD's netns is not its pod's, by the container runtime's word (netns-tie.ts); absent without a runtime to ask. */
  untied?: NetnsTie;
  /** A write left to the plugin before it reached a writer (outside the scope): counted, and said once per reason. */
  handBack(verb: "ADD" | "DEL", reason: string): void;
  /** Where an ADD written for a pod the decision read from the cache is noted: its event sweeps need not read it again. */
  written?: Pick<AddsWritten, "note">;
  /** The attachments whose ADD wrote nothing: their DEL is answered without a writer. */
  nothingWritten?: NothingWritten;
}

/**
 * The agent's writers. 100 iptables-nft ADDs at once beside two busy loops on 2 cores: one
 * writer handed 36 back to the plugins (busy past half their wait), two none (npm run bench).
 * Each costs ~7 MB idle, ~12 MB after such a burst (anonymous memory; the rest is the binary's pages).
 */
const writerCount = 2;

/** What the writers keep to: the host, the runtime's netns dirs (the only netns paths they enter) and the agent's own entry. */
export interface WritersConfig {
  /** The meshcni binary whose `apply` each writer runs. */
  binary: string;
  hostRoot: string;
  netnsDirs: string[];
  /** The plugin's entry as the agent chains it now: its paths are the only ones the writers write to. */
  template: () => Template;
  /** The container runtime's CRI socket ("auto", or "" for none), to tie an ADD's netns to its pod. */
  criSocket: string;
  /** Where the ADDs written are noted, for the sweeps. */
  written?: AddsWritten;
}

/** Starts the writers; `writing` is undefined when the agent's own entry is invalid (the plugin then writes everything). */
export function startWriters(config: WritersConfig, log: Logger, metrics: AgentMetrics): StartedWriters {
  const pool = new WriterPool(Array.from({ length: writerCount }, () => new AgentWriter(config.binary, log)));
  const look = async (paths: string[], signal?: AbortSignal) => {
    const outcome = await pool.look(config.hostRoot, paths, performance.now() + lookWithinMs, signal);
    return "looked" in outcome ? outcome.looked : undefined;
  };
  return { writing: agentWriting(config, pool, log, metrics), look, stop: () => pool.stop() };
}

/** The writers started: how the agent writes, how it asks them to look at pods' netns (undefined: they could not), how it stops them. */
export interface StartedWriters {
  writing: Writing | undefined;
  look(paths: string[], signal?: AbortSignal): Promise<NetnsLook[] | undefined>;
  stop(): void;
}

/** A look waits at most this long for a writer busy with ADDs: the sweep runs its process instead. */
const lookWithinMs = 5000;

/**
 * How the agent writes for the plugin: its writers, kept to the scope of its own installed
 * netconf entry (`template`, as the installer rendered it: the same entry it chains), every outcome counted (meshcni_agent_writes_total). Undefined when that
 * entry is invalid: the plugin then writes everything itself.
 */
export function agentWriting(
  { hostRoot, netnsDirs, template, criSocket, written }: Omit<WritersConfig, "binary">,
  writer: Pick<WriterPool, "write">,
  log: Logger,
  metrics: AgentMetrics,
): Writing | undefined {
  const scopeOf = (current: Template) => (current.ok ? writeScopeOf(current.entry, netnsDirs) : { invalid: current.reason });
  const first = scopeOf(template());
  if ("invalid" in first) {
    log.error("the agent does not write for the plugin: its own netconf entry is invalid", { reason: first.invalid });
    return undefined;
  }
  // The scope follows the entry the agent chains (replaced only by a valid one: NetconfSource), worked out once per entry.
  let held = { template: template(), scope: first };
  const said = new SaidOnce();
  return {
    hostRoot,
    ...(written ? { written } : {}),
    nothingWritten: new NothingWritten(),
    untied: netnsTie(criSocket, hostRoot, () => join(hostPaths(hostRoot)(held.scope.stateDir), "attachments")),
    get scope() {
      const current = template();
      if (current !== held.template) {
        const scope = scopeOf(current);
        if (!("invalid" in scope)) held = { template: current, scope };
      }
      return held.scope;
    },
    write: async (ask, deadline) => {
      const outcome = await writer.write(ask, deadline);
      metrics.writes.inc({ verb: ask.verb, result: "done" in outcome ? "done" : "handed_back" });
      return outcome;
    },
    handBack(verb, reason) {
      metrics.writes.inc({ verb, result: "handed_back" });
      // A netconf of another chain (Multus) would otherwise say the same at every pod start.
      if (said.first(reason)) log.warn("the plugin writes itself: the agent writes only what its own netconf entry says", { verb, reason });
    },
  };
}
