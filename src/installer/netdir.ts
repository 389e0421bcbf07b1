import {
  activeConfig,
  type ConfigFile,
  type EntryWrite,
  entryCount,
  hasEntry,
  type JsonObject,
  parseConfig,
  withEntry,
  withoutEntry,
} from "./conflist.js";
import { type FightState, noFight, noteRechain } from "./fight.js";

/** A foreign file that stays invalid this long is taken as broken, not half-written. */
export const halfWrittenGraceMs = 2000;
export const halfWrittenRetryMs = 25;

/** What the agent remembers between looks at the net dir. */
export interface NetDirMemory {
  /** Each config's text as it last held our entry (written by us, or found so). */
  readonly withEntry: ReadonlyMap<string, string>;
  /** When each invalid file sorting before the active one was first seen invalid. */
  readonly invalidSince: ReadonlyMap<string, number>;
  readonly fight: FightState;
}

export const freshMemory: NetDirMemory = { withEntry: new Map(), invalidSince: new Map(), fight: noFight };

export type NetDirPlan =
  /** Files sorting before the active one are invalid and may be mid-write: look again shortly. */
  | { kind: "wait"; files: string[]; retryInMs: number }
  | {
      kind: "apply";
      /** Invalid files past their grace: skipped, as the runtime skips them. */
      broken: Array<{ name: string; reason: string }>;
      active: string | undefined;
      /** Other configs that hold our entry, as they are without it. */
      removals: Array<{ name: string; text: string }>;
      /** The active config with our entry, when it lacks it and no fight holds it back. */
      write: (EntryWrite & { rechain: boolean; duplicates: boolean }) | undefined;
      /** Set while another agent keeps removing the entry. */
      fight: { file: string; holdMs: number; started?: { rechains: number; backoffMs: number } } | undefined;
    };

/**
 * Decides what to do with the net dir: which config the runtime uses, whether an
 * earlier file may be half-written, what to take our entry out of, what to write, and
 * whether this is a fight. Pure: files, memory and the time in; the plan and the memory
 * to keep once it is carried out.
 */
export function planNetDir(
  files: ConfigFile[],
  entry: JsonObject,
  memory: NetDirMemory,
  now: number,
): { plan: NetDirPlan; memory: NetDirMemory } {
  const active = activeConfig(files);
  const invalid = files.flatMap((file) => {
    const config = parseConfig(file);
    return !config.valid && (!active || file.name < active.file.name) ? [{ name: file.name, reason: config.reason }] : [];
  });
  const invalidSince = new Map(invalid.map(({ name }) => [name, memory.invalidSince.get(name) ?? now]));
  const waiting = invalid.filter(({ name }) => now - invalidSince.get(name)! < halfWrittenGraceMs);
  if (waiting.length > 0) {
    return {
      plan: { kind: "wait", files: waiting.map(({ name }) => name), retryInMs: halfWrittenRetryMs },
      memory: { ...memory, invalidSince },
    };
  }
  const removals = files.flatMap((file) => {
    const text = file.name === active?.file.name ? undefined : withoutEntry(parseConfig(file));
    return text === undefined ? [] : [{ name: file.name, text }];
  });
  const base = { kind: "apply" as const, broken: invalid, active: active?.file.name, removals, write: undefined, fight: undefined };
  const remembered = new Map(memory.withEntry);
  if (!active) return { plan: base, memory: { ...memory, invalidSince, withEntry: remembered } };
  if (hasEntry(active.config, entry)) {
    remembered.set(active.file.name, active.file.text);
    return { plan: base, memory: { ...memory, invalidSince, withEntry: remembered } };
  }
  const written = withEntry(active.file, active.config, entry);
  // A re-chain: the file we write held our entry, and someone has changed it since.
  const rechain = memory.withEntry.has(written.name) && memory.withEntry.get(active.file.name) !== active.file.text;
  const verdict = rechain ? noteRechain(memory.fight, written.name, now) : { state: memory.fight };
  if (verdict.holdMs !== undefined) {
    const fight = { file: written.name, holdMs: verdict.holdMs, ...(verdict.started ? { started: verdict.started } : {}) };
    return { plan: { ...base, fight }, memory: { withEntry: remembered, invalidSince, fight: verdict.state } };
  }
  remembered.set(written.name, written.text);
  const write = { ...written, rechain, duplicates: entryCount(active.config) > 1 };
  return { plan: { ...base, write }, memory: { withEntry: remembered, invalidSince, fight: verdict.state } };
}
