import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { readRegularFile, writeAtomic } from "../files.js";
import type { DetectionCache } from "./backend.js";

/** The auto-detected backend, kept in the plugin's state dir (tmpfs: gone at reboot). */
export function fileDetectionCache(stateDir: string): DetectionCache {
  const path = join(stateDir, "iptables-backend");
  return {
    read() {
      try {
        const backend = readRegularFile(path, 64).trim();
        return backend === "legacy" || backend === "nft" ? backend : undefined;
      } catch {
        return undefined;
      }
    },
    write(backend) {
      try {
        mkdirSync(stateDir, { recursive: true, mode: 0o755 });
        writeAtomic(path, `${backend}\n`);
      } catch {
        // Only a cache: detection runs again next time.
      }
    },
  };
}
