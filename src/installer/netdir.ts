import { activeConfig, type ConfigFile, loadOrder, type ParsedConfig, parseConfig } from "../cni/config-dir.js";
import type { JsonObject } from "../json.js";
import { type EntryWrite, entryCount, hasEntry, withEntry, withoutEntry } from "./conflist.js";
import { type FightState, noFight, noteRechain } from "./fight.js";

/** An active config that stays invalid this long is taken as broken, not half-written. */
export const halfWrittenGraceMs = 2000;
const halfWrittenRetryMs = 25;

/** What the agent remembers between looks at the net dir. */
export interface NetDirMemory {
  /** Each config's text as it last held our entry (written by us, or found so). */
  readonly withEntry: ReadonlyMap<string, string>;
  /** Since when the active config has been invalid. */
  readonly invalidSince: ReadonlyMap<string, number>;
  readonly fight: FightState;
}

export const freshMemory: NetDirMemory = { withEntry: new Map(), invalidSince: new Map(), fight: noFight };

/**
 * Why the entry is written: chain (the first time this agent writes it), entry_removed (a
 * config that held it was rewritten, replaced or recreated without it), or
 * active_config_changed (another config sorts first now). The last two are re-chains: a
 * window in which a pod could start unmeshed.
 */
export type WriteCause = "chain" | "entry_removed" | "active_config_changed";

export type NetDirPlan =
  /** The active config is invalid and may be mid-write: look again shortly. */
  | { kind: "wait"; file: string; retryInMs: number }
  /** The active config stays invalid: the runtime cannot load it; nothing is written. */
  | { kind: "broken"; file: string; reason: string }
  | {
      kind: "apply";
      active: string | undefined;
      /** Other configs that hold our entry, as they are without it. */
      removals: Array<{ name: string; text: string }>;
      /**
       * While the active config's chain cannot run (a plugin not installed): the configs after
       * it, up to the first that can, with our entry. CRI-O skips a config it cannot run and
       * takes the next; containerd fails on the first, so these cost it nothing.
       */
      fallbacks: EntryWrite[];
      /** The active config with our entry, when it lacks it and no fight holds it back. */
      write: (EntryWrite & { cause: WriteCause; duplicates: boolean }) | undefined;
      /** Set while another agent keeps removing the entry. */
      fight: { file: string; holdMs: number; started?: { rechains: number; backoffMs: number } } | undefined;
    };

type ValidConfig = ParsedConfig & { valid: true };

/**
 * Decides what to do with the net dir: which config the runtime uses, whether it may be
 * half-written, what to take our entry out of, what to write, and whether this is a
 * fight. `runnable` says whether the runtime can run a config's whole chain (chain.ts).
 * Pure: files, memory and the time in; the plan and the memory to keep once it is carried out.
 */
export function planNetDir(
  files: ConfigFile[],
  entry: JsonObject,
  memory: NetDirMemory,
  now: number,
  runnable: (config: ValidConfig) => boolean = () => true,
): { plan: NetDirPlan; memory: NetDirMemory } {
  const active = activeConfig(files);
  const none = { kind: "apply" as const, active: undefined, removals: [], fallbacks: [], write: undefined, fight: undefined };
  if (!active) return { plan: none, memory: { ...memory, invalidSince: new Map() } };
  if (!active.config.valid) {
    const name = active.file.name;
    const since = memory.invalidSince.get(name) ?? now;
    const kept = { ...memory, invalidSince: new Map([[name, since]]) };
    return now - since < halfWrittenGraceMs
      ? { plan: { kind: "wait", file: name, retryInMs: halfWrittenRetryMs }, memory: kept }
      : { plan: { kind: "broken", file: name, reason: active.config.reason }, memory: kept };
  }
  const config = active.config;
  const chained = runnable(config) ? [] : fallbackConfigs(files, active.file.name, runnable);
  const keep = new Set([active.file.name, ...chained.map(({ file }) => file.name)]);
  const removals = files.flatMap((file) => {
    const text = keep.has(file.name) ? undefined : withoutEntry(parseConfig(file), entry.type as string);
    return text === undefined ? [] : [{ name: file.name, text }];
  });
  const fallbacks = chained.filter(({ config }) => !hasEntry(config, entry)).map(({ file, config }) => withEntry(file, config, entry));
  const base = { ...none, active: active.file.name, removals, fallbacks };
  const remembered = new Map(memory.withEntry);
  const settled = { ...memory, invalidSince: new Map<string, number>(), withEntry: remembered };
  if (hasEntry(config, entry)) {
    remembered.set(active.file.name, active.file.text);
    return { plan: base, memory: settled };
  }
  const written = withEntry(active.file, config, entry);
  const cause: WriteCause =
    // The file we write held our entry, and someone has changed it since.
    memory.withEntry.has(written.name) && memory.withEntry.get(active.file.name) !== active.file.text
      ? "entry_removed"
      : memory.withEntry.size > 0
        ? "active_config_changed"
        : "chain";
  const verdict = cause === "entry_removed" ? noteRechain(memory.fight, written.name, now) : { state: memory.fight };
  if (verdict.holdMs !== undefined) {
    const fight = { file: written.name, holdMs: verdict.holdMs, ...(verdict.started ? { started: verdict.started } : {}) };
    return { plan: { ...base, fight }, memory: { ...settled, fight: verdict.state } };
  }
  remembered.set(written.name, written.text);
  const write = { ...written, cause, duplicates: entryCount(config, entry.type as string) > 1 };
  return { plan: { ...base, write }, memory: { ...settled, fight: verdict.state } };
}

/** The valid configs after the active one, up to and including the first whose chain can run: where CRI-O goes next. */
function fallbackConfigs(files: ConfigFile[], active: string, runnable: (config: ValidConfig) => boolean) {
  const after: Array<{ file: ConfigFile; config: ValidConfig }> = [];
  for (const file of loadOrder(files).filter((candidate) => candidate.name > active)) {
    const config = parseConfig(file);
    if (!config.valid) continue;
    after.push({ file, config });
    if (runnable(config)) break;
  }
  return after;
}
