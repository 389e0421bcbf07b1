import { type RepairPolicy, repairPolicies } from "../audit/repair.js";
import { errorMessage } from "../errors.js";
import { numberFlag, oneOf, parseFlags } from "../flags.js";
import { chainByChoices } from "../installer/dropin.js";
import { agentLogLevels } from "../log.js";
import { parseNetConf } from "../mesh/netconf.js";
import { checkManifestOptions, dnsLabel } from "./checks.js";
import { defaultManifestOptions as defaults, type ManifestOptions } from "./options.js";
import { writeOutputDir } from "./output-dir.js";
import { systemNamespaces } from "./policy.js";
import { manifestsYaml } from "./yaml.js";

export const manifestsUsage = `meshcni manifests [options]   print the manifests that install meshcni (kubectl apply -f -)

  --namespace NS             where the agent runs (${defaults.namespace}); another must exist, or:
  --create-namespace         include the Namespace (privileged pod security) for another --namespace
  --image IMAGE              the agent's image (${defaults.image})
  --log-level LEVEL          debug, info, warn or error, for the agent and the plugin (${defaults.logLevel})
  --repair POLICY            ${repairPolicies.join(", ")} (${defaults.repair}); RBAC follows
  --evict-namespaces NS,NS   with --repair evict, which needs it: the only namespaces the agent may evict in
                             (its flag and the node-scope policy); '*': any but kube-system, kube-public, kube-node-lease
  --startup-taint TAINT      lifted once the node is ready; "" for none (${defaults.startupTaint})
  --net-dir DIR              the nodes' CNI config dir (${defaults.netDir})
  --bin-dir DIR              the nodes' CNI bin dir (${defaults.binDir})
  --extra-bin-dir DIR        another dir the runtime finds plugins in (containerd's bin_dirs, CRI-O's
                             plugin_dirs; repeatable): mounted read-only, the chain's plugins are looked for there
  --netns-dir DIR            where the runtime keeps pod netns (${defaults.netnsDir})
  --cri-socket PATH          the runtime's CRI socket, asked which netns is whose (${defaults.criSocket};
                             CRI-O: /var/run/crio/crio.sock; "": none, pods then judged by IP only and never acted on)
  --cpu-request Q, --memory-request Q, --memory-limit Q   (${defaults.resources.cpuRequest}, ${defaults.resources.memoryRequest}, ${defaults.resources.memoryLimit})
  --priority-class NAME      (${defaults.priorityClassName})
  --node-selector KEY=VALUE  besides kubernetes.io/os=linux (repeatable)
  --toleration KEY[=VALUE][:EFFECT]   tolerate only these (repeatable); every taint by default
  --label KEY=VALUE          on every object (repeatable)
  --netconf KEY=VALUE        a linkerd netconf setting, VALUE as JSON or a string (repeatable),
                             e.g. --netconf proxy-uid=2102 --netconf 'inbound-ports-to-ignore=["4190","4191"]'
  --metrics-port N           /metrics, /readyz and /healthz on the node (${defaults.metricsPort})
  --pod-monitor              also a Prometheus Operator PodMonitor
  --prometheus-rule          also a PrometheusRule with meshcni's alerts
  --grafana-dashboard        also meshcni's Grafana dashboard (a ConfigMap for Grafana's sidecar)
  --chain-by MODE            auto (meshcni's own drop-in where the runtime says it loads drop-ins, else its entry
                             in the active config) or conflist (the entry always) (${defaults.chainBy})
  --linkerd-names            in linkerd-cni's place: the agent's objects linkerd-cni (its ConfigMap linkerd-cni-config,
                             labelled linkerd.io/cni-resource), its entry and binary linkerd-cni, its kubeconfig
                             ZZZ-linkerd-cni-kubeconfig; with --namespace linkerd-cni, what \`linkerd check\` looks for
  --output-dir DIR           write one file per kind and a kustomization.yaml instead, and the alerts and
                             the dashboard as kustomize components (components/; listed when asked for)

Refuses what cannot work (a relative path, a name, quantity or image Kubernetes refuses, a netconf
key nobody reads…) and warns on stderr of what is likely not meant. Exit 0 when written, 1 when
--output-dir cannot be written, 2 on a refusal.
`;

function pairs(flag: string, list: string[]): Record<string, string> {
  return Object.fromEntries(
    list.map((pair) => {
      const at = pair.indexOf("=");
      if (at <= 0) throw new Error(`--${flag} must be KEY=VALUE, not ${JSON.stringify(pair)}`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
}

function parseToleration(text: string) {
  const match = /^([A-Za-z0-9./_-]+)(?:=([A-Za-z0-9._-]*))?(?::(NoSchedule|PreferNoSchedule|NoExecute))?$/.exec(text);
  if (!match) throw new Error(`--toleration must be KEY[=VALUE][:EFFECT], not ${JSON.stringify(text)}`);
  return {
    key: match[1]!,
    operator: match[2] === undefined ? ("Exists" as const) : ("Equal" as const),
    ...(match[2] ? { value: match[2] } : {}),
    ...(match[3] ? { effect: match[3] } : {}),
  };
}

/**
 * --evict-namespaces NS,NS: namespaces' names, or `*` for any (["*"]), only with --repair evict
 * (which needs it, as the agent does), none of the never-meshed system ones.
 */
function evictNamespacesOf(text: string | undefined, repair: RepairPolicy): string[] | undefined {
  if (text === undefined) {
    if (repair === "evict")
      throw new Error(
        "--repair evict needs --evict-namespaces NS,NS: the namespaces the agent may evict pods in ('*': any but the system ones)",
      );
    return undefined;
  }
  if (repair !== "evict") throw new Error("--evict-namespaces needs --repair evict");
  if (text.trim() === "*") return ["*"];
  const names = text.split(",").map((name) => name.trim());
  for (const name of names) {
    if (!new RegExp(`^${dnsLabel}$`).test(name)) throw new Error(`--evict-namespaces: ${JSON.stringify(name)} is no namespace name`);
    if (systemNamespaces.includes(name)) throw new Error(`--evict-namespaces: ${name}'s pods are never meshed, so never evicted`);
  }
  return names;
}

/** Reads the flags into options, checked (checkManifestOptions: its warnings beside them); throws one line naming the bad flag and value. */
export function parseManifestArgs(argv: string[]): ManifestOptions & { outputDir: string | undefined; warnings: string[] } {
  const { values } = parseFlags({
    args: argv,
    strict: true,
    options: {
      namespace: { type: "string", default: defaults.namespace },
      "create-namespace": { type: "boolean", default: false },
      image: { type: "string", default: defaults.image },
      "log-level": { type: "string", default: defaults.logLevel },
      repair: { type: "string", default: defaults.repair },
      "evict-namespaces": { type: "string" },
      "startup-taint": { type: "string", default: defaults.startupTaint },
      "net-dir": { type: "string", default: defaults.netDir },
      "bin-dir": { type: "string", default: defaults.binDir },
      "extra-bin-dir": { type: "string", multiple: true, default: [] },
      "netns-dir": { type: "string", default: defaults.netnsDir },
      "cri-socket": { type: "string", default: defaults.criSocket },
      "cpu-request": { type: "string", default: defaults.resources.cpuRequest },
      "memory-request": { type: "string", default: defaults.resources.memoryRequest },
      "memory-limit": { type: "string", default: defaults.resources.memoryLimit },
      "priority-class": { type: "string", default: defaults.priorityClassName },
      "node-selector": { type: "string", multiple: true, default: [] },
      toleration: { type: "string", multiple: true, default: [] },
      label: { type: "string", multiple: true, default: [] },
      netconf: { type: "string", multiple: true, default: [] },
      "metrics-port": { type: "string", default: String(defaults.metricsPort) },
      "pod-monitor": { type: "boolean", default: false },
      "prometheus-rule": { type: "boolean", default: false },
      "grafana-dashboard": { type: "boolean", default: false },
      "linkerd-names": { type: "boolean", default: false },
      "chain-by": { type: "string", default: defaults.chainBy },
      "output-dir": { type: "string" },
    },
  });
  const metricsPort = numberFlag(
    "metrics-port",
    values["metrics-port"],
    (port) => Number.isInteger(port) && port >= 1 && port <= 65535,
    "a port",
  );
  const linkerd = Object.fromEntries(
    Object.entries(pairs("netconf", values.netconf)).map(([key, text]) => {
      try {
        return [key, JSON.parse(text)];
      } catch {
        return [key, text];
      }
    }),
  );
  const logLevel = oneOf("log-level", values["log-level"], agentLogLevels);
  // The netconf must be one the plugin accepts: a bad value is refused here, not at every pod start.
  try {
    parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "meshcni", type: "meshcni", log_level: logLevel, linkerd }));
  } catch (error) {
    throw new Error(`--netconf: ${errorMessage(error)}`);
  }
  const repair = oneOf("repair", values.repair, repairPolicies);
  const options = {
    namespace: values.namespace,
    createNamespace: values["create-namespace"] || values.namespace === defaults.namespace,
    image: values.image,
    logLevel,
    repair,
    evictNamespaces: evictNamespacesOf(values["evict-namespaces"], repair),
    startupTaint: values["startup-taint"] || undefined,
    netDir: values["net-dir"],
    binDir: values["bin-dir"],
    extraBinDirs: values["extra-bin-dir"],
    netnsDir: values["netns-dir"],
    criSocket: values["cri-socket"],
    resources: { cpuRequest: values["cpu-request"], memoryRequest: values["memory-request"], memoryLimit: values["memory-limit"] },
    priorityClassName: values["priority-class"],
    nodeSelector: pairs("node-selector", values["node-selector"]),
    tolerations: values.toleration.length > 0 ? values.toleration.map(parseToleration) : undefined,
    labels: pairs("label", values.label),
    linkerd,
    metricsPort,
    podMonitor: values["pod-monitor"],
    prometheusRule: values["prometheus-rule"],
    grafanaDashboard: values["grafana-dashboard"],
    linkerdNames: values["linkerd-names"],
    chainBy: oneOf("chain-by", values["chain-by"], chainByChoices),
    outputDir: values["output-dir"],
  };
  return { ...options, warnings: checkManifestOptions(options) };
}

export function runManifests(argv: string[]): number {
  let options: ReturnType<typeof parseManifestArgs>;
  try {
    options = parseManifestArgs(argv);
  } catch (error) {
    process.stderr.write(`meshcni manifests: ${errorMessage(error)} (see meshcni manifests --help)\n`);
    return 2;
  }
  for (const warning of options.warnings) process.stderr.write(`meshcni manifests: warning: ${warning}\n`);
  if (!options.outputDir) {
    process.stdout.write(manifestsYaml(options));
    return 0;
  }
  try {
    for (const line of writeOutputDir(options.outputDir, options)) process.stderr.write(`meshcni manifests: ${line}\n`);
  } catch (error) {
    process.stderr.write(`meshcni manifests: cannot write ${options.outputDir}: ${errorMessage(error)}\n`);
    return 1;
  }
  return 0;
}
