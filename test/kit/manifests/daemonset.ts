import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { IDaemonSet } from "kubernetes-models/apps/v1";
import { parseAllDocuments } from "yaml";
import { parseAgentOptions } from "../../../src/agent/options.js";
import { parseManifestArgs } from "../../../src/manifests/main.js";
import { manifestsYaml } from "../../../src/manifests/yaml.js";

export const deployDir = join(import.meta.dirname, "../../../deploy");

export type Manifest = { kind: string; metadata: { name: string; namespace?: string }; [key: string]: unknown };

export function parseYaml(text: string, source: string): Manifest[] {
  return parseAllDocuments(text).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors[0]!.message}`);
    return doc.toJS() as Manifest;
  });
}

export const load = (file: string) => parseYaml(readFileSync(join(deployDir, file), "utf8"), file);
export const rendered = (argv: string[]) => parseYaml(manifestsYaml(parseManifestArgs(argv)), `meshcni manifests ${argv.join(" ")}`);

/** The agent's container and its settings as the DaemonSet gives them: its args and the env values it sets. */
export function agentOf(manifests: Manifest[]) {
  const daemonSet = manifests.find((manifest) => manifest.kind === "DaemonSet") as unknown as IDaemonSet;
  const podSpec = daemonSet.spec!.template.spec!;
  const container = podSpec.containers[0]!;
  const env = container.env ?? [];
  // The values it sets, and the namespace the downward API gives (--config-map reads in it).
  const values = env.flatMap((variable) => (variable.value === undefined ? [] : [[variable.name, variable.value]]));
  const namespace = env.find((variable) => variable.valueFrom?.fieldRef?.fieldPath === "metadata.namespace");
  if (namespace) values.push([namespace.name, daemonSet.metadata!.namespace!]);
  const options = parseAgentOptions(container.args ?? [], Object.fromEntries(values), container.command![0]!);
  return { daemonSet, podSpec, container, env, options };
}

/** The netconf template in the manifests' ConfigMap, as the agent's env gets it. */
export const netconfText = (manifests: Manifest[]) =>
  (
    manifests.find((manifest) => manifest.kind === "ConfigMap" && manifest.metadata.name === "meshcni-config") as unknown as {
      data: { cni_network_config: string };
    }
  ).data.cni_network_config;
