import { accessSync, constants, existsSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errorMessage } from "../errors.js";
import { processFileName, removeFile } from "../files.js";
import type { IptablesBackend } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import { readLimitBytes } from "../redirect/table.js";
import { type Ran, runBounded } from "../spawn.js";
import { binaryName } from "./binaries.js";
import type { SaveProbe } from "./detect.js";

/** Runtimes may exec plugins with a PATH lacking the sbin directories iptables lives in. */
const searchPath = [process.env.PATH, "/usr/local/sbin", "/usr/sbin", "/sbin"].filter(Boolean).join(":");

/** One iptables process on a pod's tables takes milliseconds; one that hangs is killed. */
const iptablesTimeoutMs = 10_000;

export interface IptablesRunner {
  backend: IptablesBackend;
  save(family: Family): Promise<string>;
  restore(family: Family, text: string): Promise<void>;
  /** Removes what the runner left on the host (its private lock file). */
  close(): void;
}

/** One iptables process, bounded: its time (iptablesTimeoutMs) and what it prints (readLimitBytes). */
const run = (binary: string, args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<Ran> =>
  runBounded(binary, args, { env, ...(input === undefined ? {} : { input }), timeoutMs: iptablesTimeoutMs, maxBytes: readLimitBytes });

/** An iptables binary that failed, hung or is not there, with what ran and what it said. */
export class IptablesError extends Error {
  readonly notFound: boolean;
  readonly timedOut: boolean;
  /** It ran and refused (a non-zero exit): a restore's commit was refused as a whole. */
  readonly refused: boolean;

  constructor(
    readonly binary: string,
    readonly args: string[],
    readonly exitCode: number | undefined,
    readonly stderr: string,
    failure: Ran["failure"],
  ) {
    const notFound = failure === "notFound";
    const timedOut = failure === "timedOut";
    super(
      notFound
        ? `${binary} not found (searched ${searchPath}); install iptables or set linkerd.iptables-mode`
        : timedOut
          ? `${binary} timed out after ${iptablesTimeoutMs / 1000} s and was killed`
          : failure === "tooLarge"
            ? `${binary} wrote more than ${readLimitBytes >> 20} MiB and was killed: not read further`
            : `${binary} failed: ${stderr.trim() || (failure ? errorMessage(failure) : `exit code ${exitCode}`)}`,
    );
    this.name = "IptablesError";
    this.notFound = notFound;
    this.timedOut = timedOut;
    this.refused = !notFound && !timedOut && exitCode !== undefined && exitCode !== 0;
  }
}

/**
 * Runs iptables-save/-restore of one backend. Legacy restore takes the host-wide xtables
 * lock, though each pod netns has its own tables; a lock file private to this process
 * (XTABLES_LOCKFILE, iptables >= 1.8.6) keeps pods from queueing behind each other; it
 * lives in locksDir, named by pid, so one a killed plugin left is swept later. `makeLocksDir:
 * false` (DEL: after an uninstall it must not put back the state dir's locks dir) puts it in
 * the OS's temp dir when locksDir is not there. Looked at for each restore: an uninstall may
 * empty the state dir between two.
 * `-w` is passed only when the netconf asks (use-wait-flag): with a private lock there
 * is nothing to wait for. nft commits through netlink and takes no lock.
 */
export async function createIptablesRunner(
  backend: IptablesBackend,
  options: { wait: boolean; locksDir: string; makeLocksDir: boolean },
): Promise<IptablesRunner> {
  // This process's lock file in each dir it used, removed at close.
  const lockFiles = new Map<string, string>();
  const lockFile = () => {
    if (options.makeLocksDir) mkdirSync(options.locksDir, { recursive: true, mode: 0o755 });
    const dir = existsSync(options.locksDir) ? options.locksDir : tmpdir();
    if (!lockFiles.has(dir)) lockFiles.set(dir, processFileName(dir, "xtables"));
    return lockFiles.get(dir)!;
  };
  const runChecked = async (binary: string, args: string[], input?: string, lock?: string) => {
    const env = { PATH: searchPath, ...(lock ? { XTABLES_LOCKFILE: lock } : {}) };
    const ran = await run(binary, args, env, input);
    if (ran.exitCode !== 0 || ran.failure) throw new IptablesError(binary, args, ran.exitCode, ran.stderr, ran.failure);
    return ran.stdout;
  };
  return {
    backend,
    save: (family) => runChecked(binaryName(backend, family, "save"), ["-t", "nat"]),
    async restore(family, text) {
      // Only restore takes the lock; named here, so a runner that only saves writes nothing.
      const lock = backend === "nft" ? undefined : lockFile();
      await runChecked(binaryName(backend, family, "restore"), ["--noflush", ...(options.wait ? ["-w"] : [])], text, lock);
    },
    close() {
      for (const file of lockFiles.values()) removeFile(file);
    },
  };
}

/** One save of a table (`-t raw`…), its output; a binary failed, missing or killed throws (IptablesError): never read as "no rules". */
export async function checkedSave(binary: string, args: string[]): Promise<string> {
  const ran = await run(binary, args, { PATH: searchPath });
  if (ran.exitCode !== 0 || ran.failure) throw new IptablesError(binary, args, ran.exitCode, ran.stderr, ran.failure);
  return ran.stdout;
}

/** Backend detection's probe: a failed or missing binary counts as no rules. */
export const hostSaveProbe: SaveProbe = async (binary, args) => {
  const ran = await run(binary, args, { PATH: searchPath });
  return ran.exitCode === 0 && !ran.failure ? ran.stdout : "";
};

/** The dirs of a node's own PATH, looked into under a host root (another system's binaries, as a debug pod sees them). */
const hostBinDirs = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

const executableIn = (dirs: string[], binary: string) =>
  dirs.some((dir) => {
    try {
      accessSync(join(dir, binary), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });

/** Whether an executable of that name is on the path the runner searches (one argument: it is passed as a callback). */
export const binaryAvailable = (binary: string): boolean => executableIn(searchPath.split(":"), binary);

/** Whether the node under `hostRoot` has an executable of that name on its own PATH. */
export const binaryOnHost =
  (hostRoot: string) =>
  (binary: string): boolean =>
    executableIn(
      hostBinDirs.map((dir) => join(hostRoot, dir)),
      binary,
    );
