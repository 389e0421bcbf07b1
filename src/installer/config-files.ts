import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { errnoCode } from "../errors.js";
import { type ConfigFile, isConfigName } from "./conflist.js";

/** The config files in the net dir as they are now; one vanishing mid-read is skipped. */
export function readConfigFiles(netDir: string): ConfigFile[] {
  return readdirSync(netDir)
    .filter(isConfigName)
    .flatMap((name) => {
      try {
        return [{ name, text: readFileSync(join(netDir, name), "utf8") }];
      } catch (error) {
        if (errnoCode(error) === "ENOENT") return [];
        throw error;
      }
    });
}
