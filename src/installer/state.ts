import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { type ConfigFile, chooseActive, isChained, isConfigName } from "./conflist.js";
import { type InstallerOptions, installerPaths } from "./options.js";
import { defaultTemplate, renderTemplate, type Template } from "./template.js";

/** The config files in the net dir as they are now; one vanishing mid-read is skipped. */
export function readConfigFiles(netDir: string): ConfigFile[] {
  return readdirSync(netDir)
    .filter(isConfigName)
    .flatMap((name) => {
      try {
        return [{ name, text: readFileSync(join(netDir, name), "utf8") }];
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
        throw error;
      }
    });
}

export function loadTemplate(options: InstallerOptions): Template {
  let text = options.template ?? defaultTemplate;
  if (options.templateFile) {
    try {
      text = readFileSync(options.templateFile, "utf8");
    } catch (error) {
      return { ok: false, reason: `cannot read the netconf template ${options.templateFile}: ${(error as Error).message}` };
    }
  }
  return renderTemplate(text, installerPaths(options).kubeconfigOnHost);
}

export interface Readiness {
  ready: boolean;
  reasons: string[];
  /** The active config file's name, when there is one. */
  active: string | undefined;
}

/**
 * Ready only while the binary, the kubeconfig and the entry in the active config are
 * all in place. Reads the disk only, so `meshcni ready` and the agent agree.
 */
export function checkReadiness(options: InstallerOptions, template: Template): Readiness {
  const paths = installerPaths(options);
  const reasons: string[] = [];
  if (!template.ok) return { ready: false, reasons: [template.reason], active: undefined };
  const binary = join(paths.binDir, template.binaryName);
  if (!existsSync(binary) || (statSync(binary).mode & 0o111) === 0) reasons.push(`no executable ${binary}`);
  if (!existsSync(paths.kubeconfig)) reasons.push(`no kubeconfig ${paths.kubeconfig}`);
  let active: string | undefined;
  try {
    const found = chooseActive(readConfigFiles(paths.netDir));
    active = found?.file.name;
    if (!found) reasons.push(`no valid CNI config in ${paths.netDir} (waiting for the primary CNI)`);
    else if (!isChained(found.config, template.entry))
      reasons.push(`${join(paths.netDir, found.file.name)} does not end with meshcni's entry`);
  } catch (error) {
    reasons.push(`cannot read ${paths.netDir}: ${(error as Error).message}`);
  }
  return { ready: reasons.length === 0, reasons, active };
}
