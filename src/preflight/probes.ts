import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { connectRuntime } from "../cri/runtime.js";
import { criSocketOf } from "../cri/sockets.js";
import { errnoCode, errorMessage } from "../errors.js";
import type { CriFact, StateDirFact } from "./access.js";

/**
 * Whether ADD can keep its records in `path` (a host path under `onHost`), proven by doing
 * it: a dir made where the state dir is (or, not there yet, in the closest dir above it that
 * is), a file written in it, both removed. Leaves nothing behind.
 */
export function proveStateDir(path: string, onHost: (path: string) => string): StateDirFact {
  const target = onHost(path);
  const exists = existsSync(target);
  if (exists && !statSync(target).isDirectory()) return { path, exists, refused: "it is no directory" };
  let dir = target;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  let probe: string | undefined;
  try {
    probe = mkdtempSync(join(dir, ".meshcni-check-"));
    writeFileSync(join(probe, "record.json"), "{}");
    return { path, exists };
  } catch (error) {
    return { path, exists, refused: `${errnoCode(error) ?? errorMessage(error)} making a dir and a file in ${dir}` };
  } finally {
    if (probe) rmSync(probe, { recursive: true, force: true });
  }
}

/** The runtime's CRI socket (`flag`: auto, a host path, or "" for none), asked for its pod sandboxes as the audit asks. */
export async function askCri(flag: string, onHost: (path: string) => string): Promise<CriFact> {
  if (flag === "") return { flag };
  const socket = criSocketOf(flag, (path) => existsSync(onHost(path)));
  if (!socket) return { flag, problem: "no CRI socket found" };
  if (!existsSync(onHost(socket))) return { flag, socket, problem: "it does not exist" };
  if (!statSync(onHost(socket)).isSocket()) return { flag, socket, problem: "it is no socket" };
  let runtime: Awaited<ReturnType<typeof connectRuntime>> | undefined;
  try {
    runtime = await connectRuntime(onHost(socket));
    return { flag, socket, sandboxes: (await runtime.sandboxIds(Date.now() + 5000)).size };
  } catch (error) {
    return { flag, socket, problem: errorMessage(error) };
  } finally {
    runtime?.close();
  }
}
