import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { activeConfig, readConfigFiles } from "../../../src/cni/config-dir.js";

/**
 * The `cniconfig` a containerd would report for a net dir as it is now (go-cni's
 * ConfigResult): loopback, then the active config as libcni loads it, its drop-ins
 * (`<dir>/<name>/*.conf`, by name) appended when `dropIns` (libcni 1.3, containerd 2.1 on)
 * and the config allows them. Each plugin's Source is its JSON, as the real one gives it.
 */
export function libcniLoaded(netDir: string, dropIns: boolean): string {
  const plugin = (json: Record<string, unknown>) => ({ Network: { type: json.type }, Source: JSON.stringify(json) });
  const loopback = { Config: { Name: "cni-loopback", CNIVersion: "0.3.1", Plugins: [plugin({ type: "loopback" })] }, IFName: "lo" };
  const active = activeConfig(readConfigFiles(netDir));
  const networks: object[] = [loopback];
  if (active?.config.valid && active.config.kind === "conflist") {
    const { json } = active.config;
    const dir = join(netDir, String(json.name));
    const loadsDir = dropIns && json.loadOnlyInlinedPlugins !== true && existsSync(dir);
    const appended = loadsDir
      ? readdirSync(dir)
          .filter((name) => name.endsWith(".conf"))
          .sort()
          .map((name) => JSON.parse(readFileSync(join(dir, name), "utf8")) as Record<string, unknown>)
      : [];
    const plugins = [...(json.plugins as Array<Record<string, unknown>>), ...appended].map(plugin);
    networks.push({ Config: { Name: json.name, CNIVersion: json.cniVersion, Plugins: plugins }, IFName: "eth0" });
  }
  return JSON.stringify({ PluginDirs: ["/opt/cni/bin"], PluginConfDir: netDir, PluginMaxConfNum: 1, Prefix: "eth", Networks: networks });
}
