import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { paths, podCidr } from "./layout.js";
import { primaryConflist } from "./node.js";
import { startDaemon, stopDaemon } from "./processes.js";
import type { Components } from "./teardown.js";

/** Where Cilium's agent writes its conflist: Helm's `write-cni-conf-when-ready`, in the node's conf dir. */
export const ciliumConflistPath = join(paths.cniConfDir, "05-cilium.conflist");
/** Cilium's custom config (Helm `cni.customConf`/`cni.configMap`, the agent's `--read-cni-conf`), outside the conf dir. */
export const ciliumSourcePath = join(paths.dir, "cilium-custom.conflist");
const backupSuffix = ".cilium_bak";
const watcherName = "cilium-writer";
const watcherLog = join(paths.logs, `${watcherName}.log`);

/**
 * The custom config: Cilium's network name, its first plugin the cluster's own bridge and
 * host-local (cilium-cni would need a running Cilium agent). host-local keeps one store per
 * network name, so it allocates from the upper half of the pod range: the lower half's
 * addresses stay with pods of the old network.
 */
export function ciliumCustomConflist(): Record<string, unknown> {
  const [bridge] = primaryConflist().plugins as Array<Record<string, unknown>>;
  const upperHalf = { subnet: podCidr, rangeStart: podCidr.replace(/0\/24$/, "128") };
  return { cniVersion: "1.0.0", name: "cilium", plugins: [{ ...bridge, ipam: { ...(bridge!.ipam as object), ranges: [[upperHalf]] } }] };
}

/** One line of the writer's log (slog's text form): its time (ms since the epoch) and message. */
export interface WriterLine {
  time: number;
  msg: string;
  line: string;
}

const parse = (log: string): WriterLine[] =>
  log
    .split("\n")
    .map((line) => ({ line, time: Date.parse(/^time=(\S+)/.exec(line)?.[1] ?? ""), msg: /msg="([^"]*)"/.exec(line)?.[1] ?? "" }))
    .filter(({ time }) => !Number.isNaN(time));

/** The cell's log line for each write of 05-cilium.conflist (one it found unchanged it does not write). */
export const isWrite = (line: WriterLine) => line.msg === "Wrote CNI configuration file";

const flags = (exclusive: boolean) => [
  `--write-cni-conf-when-ready=${ciliumConflistPath}`,
  `--read-cni-conf=${ciliumSourcePath}`,
  `--cni-exclusive=${exclusive}`,
];

/**
 * Cilium's own CNI config writer (daemon/cmd/cni, the cell cilium-agent starts), run once as
 * an agent's start runs it: the custom config written as 05-cilium.conflist and, when
 * exclusive (Helm's default), every other config renamed *.cilium_bak.
 */
export async function runCiliumWriter(bin: Components, exclusive: boolean): Promise<{ exitedAt: number; lines: WriterLine[] }> {
  writeFileSync(ciliumSourcePath, `${JSON.stringify(ciliumCustomConflist(), null, 2)}\n`);
  const result = await execa(join(bin.cilium, "cilium"), flags(exclusive), { reject: false });
  const exitedAt = Date.now();
  if (result.exitCode !== 0) throw new Error(`Cilium's writer exited ${result.exitCode}:\n${result.stderr}`);
  return { exitedAt, lines: parse(result.stderr) };
}

/** The writer kept running as the agent keeps it (`--watch`); a teardown stops it with the cluster's daemons. */
export function startCiliumWatcher(bin: Components, exclusive: boolean): void {
  writeFileSync(ciliumSourcePath, `${JSON.stringify(ciliumCustomConflist(), null, 2)}\n`);
  rmSync(watcherLog, { force: true });
  startDaemon({ name: watcherName, command: join(bin.cilium, "cilium"), args: [...flags(exclusive), "--watch"] });
}

/** What the running writer has logged so far. */
export const watcherLines = (): WriterLine[] => (existsSync(watcherLog) ? parse(readFileSync(watcherLog, "utf8")) : []);

export const stopCiliumWatcher = () => stopDaemon(watcherName);

/** The conf dir's files that Cilium set aside. */
export const setAside = () => readdirSync(paths.cniConfDir).filter((name) => name.endsWith(backupSuffix));

/**
 * Undoes a takeover as an operator would (Cilium never does): every *.cilium_bak renamed
 * back, then 05-cilium.conflist removed, so the conf dir always holds an active config.
 */
export function undoTakeover(): void {
  for (const name of setAside()) renameSync(join(paths.cniConfDir, name), join(paths.cniConfDir, name.slice(0, -backupSuffix.length)));
  rmSync(ciliumConflistPath, { force: true });
}

/** The plugin types 05-cilium.conflist chains now, in order (none while it is absent or mid-write). */
export function ciliumChainedTypes(): string[] {
  try {
    return (JSON.parse(readFileSync(ciliumConflistPath, "utf8")) as { plugins: Array<{ type: string }> }).plugins.map((p) => p.type);
  } catch {
    return [];
  }
}
