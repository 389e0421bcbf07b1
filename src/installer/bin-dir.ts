import { lstatSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { errnoCode } from "../errors.js";
import { hostPaths } from "../host.js";

/** Links followed to reach a file, as the kernel's own limit on nested symlinks in a path is 40. */
const maxLinks = 40;

/**
 * The names in a CNI bin dir the runtime can execute: regular files with an execute bit,
 * directly or through symlinks. A symlink's absolute target is the host's (Debian's
 * plugins live in /usr/lib/cni), so it is followed under hostRoot; a target not found
 * there counts as executable, since the agent's container may not mount where it points.
 * A missing dir holds none.
 */
export function executablesIn(binDir: string, hostRoot: string): Set<string> {
  let names: string[];
  try {
    names = readdirSync(binDir);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return new Set();
    throw error;
  }
  const onHost = hostPaths(hostRoot);
  return new Set(names.filter((name) => isExecutable(join(binDir, name), onHost)));
}

/** The plugins the runtime can run from any of its bin dirs (host paths already under hostRoot). */
export function pluginExecutables(dirs: string[], hostRoot: string): Set<string> {
  return new Set(dirs.flatMap((dir) => [...executablesIn(dir, hostRoot)]));
}

function isExecutable(path: string, onHost: (path: string) => string): boolean {
  let current = path;
  try {
    for (let links = 0; links <= maxLinks; links++) {
      if (!lstatSync(current).isSymbolicLink()) {
        const stat = statSync(current);
        return stat.isFile() && (stat.mode & 0o111) !== 0;
      }
      const target = readlinkSync(current);
      current = isAbsolute(target) ? onHost(target) : join(dirname(current), target);
    }
    // A loop: the runtime's stat fails too.
    return false;
  } catch (error) {
    // Vanished from the bin dir itself: not there. Past a link: not known from here.
    return current !== path && errnoCode(error) === "ENOENT";
  }
}
