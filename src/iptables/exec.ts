import { accessSync, constants, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Options } from "execa";
import { errnoCode, errorMessage } from "../errors.js";
import { processFileName, removeFile } from "../files.js";
import { binaryName, type IptablesBackend, type SaveProbe } from "./backend.js";
import type { Family } from "./types.js";

/** execa is most of a plugin process's memory (bench/README.md): loaded when first needed. */
const loadExeca = async () => (await import("execa")).execa;

/** Runtimes may exec plugins with a PATH lacking the sbin directories iptables lives in. */
export const searchPath = [process.env.PATH, "/usr/local/sbin", "/usr/sbin", "/sbin"].filter(Boolean).join(":");

/** One iptables process on a pod's tables takes milliseconds; one that hangs is killed. */
export const iptablesTimeoutMs = 10_000;

export interface IptablesRunner {
  backend: IptablesBackend;
  save(family: Family): Promise<string>;
  restore(family: Family, text: string): Promise<void>;
  /** Removes what the runner left on the host (its private lock file). */
  close(): void;
}

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
    cause: unknown,
  ) {
    const notFound = errnoCode(cause) === "ENOENT";
    const timedOut = (cause as { timedOut?: unknown } | undefined)?.timedOut === true;
    super(
      notFound
        ? `${binary} not found (searched ${searchPath}); install iptables or set linkerd.iptables-mode`
        : timedOut
          ? `${binary} timed out after ${iptablesTimeoutMs / 1000} s and was killed`
          : `${binary} failed: ${stderr.trim() || (cause as { shortMessage?: string }).shortMessage || errorMessage(cause)}`,
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
 * lives in lockDir, named by pid, so one a killed plugin left is swept later.
 * `-w` is passed only when the netconf asks (use-wait-flag): with a private lock there
 * is nothing to wait for. nft commits through netlink and takes no lock.
 */
export async function createIptablesRunner(backend: IptablesBackend, options: { wait: boolean; lockDir: string }): Promise<IptablesRunner> {
  const execa = await loadExeca();
  const lockFile = backend === "nft" ? undefined : processFileName(options.lockDir, "xtables");
  const execOptions: Options = {
    env: { PATH: searchPath, ...(lockFile ? { XTABLES_LOCKFILE: lockFile } : {}) },
    stripFinalNewline: false,
    timeout: iptablesTimeoutMs,
    killSignal: "SIGKILL",
  };
  const run = async (binary: string, args: string[], input?: string) => {
    try {
      return String((await execa(binary, args, { ...execOptions, ...(input === undefined ? {} : { input }) })).stdout);
    } catch (error) {
      const failed = error as { exitCode?: number; stderr?: unknown };
      throw new IptablesError(binary, args, failed.exitCode, String(failed.stderr ?? ""), error);
    }
  };
  return {
    backend,
    save: (family) => run(binaryName(backend, family, "save"), ["-t", "nat"]),
    async restore(family, text) {
      // Only restore takes the lock; made here, so a runner that only saves writes nothing.
      if (lockFile) mkdirSync(options.lockDir, { recursive: true, mode: 0o755 });
      await run(binaryName(backend, family, "restore"), ["--noflush", ...(options.wait ? ["-w"] : [])], text);
    },
    close() {
      if (lockFile) removeFile(lockFile);
    },
  };
}

/** Backend detection's probe: a failed or missing binary counts as no rules. */
export const hostSaveProbe: SaveProbe = async (binary, args) => {
  const execa = await loadExeca();
  const result = await execa(binary, args, { env: { PATH: searchPath }, reject: false, timeout: iptablesTimeoutMs, killSignal: "SIGKILL" });
  return result.exitCode === 0 ? String(result.stdout) : "";
};

/** Whether an executable of that name is on the path the runner searches. */
export function binaryAvailable(binary: string): boolean {
  return searchPath.split(":").some((dir) => {
    try {
      accessSync(join(dir, binary), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
