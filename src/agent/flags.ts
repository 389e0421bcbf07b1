import { repairPolicies } from "../audit/repair.js";
import { parseFlags } from "../flags.js";
import { chainByChoices } from "../installer/dropin.js";
import { agentLogLevels } from "../log.js";
import { defaultStateDir } from "../state/records.js";
import { maxPluginTokenSeconds } from "./plugin-token.js";

/**
 * One flag of `meshcni install`. Its parsing, `meshcni help install` and docs/agent.md's
 * table are all made from this table (build/docs.ts writes the docs' one), as Istio's
 * cni/pkg/cmd declares flag, environment variable, default and help in one call.
 */
export interface AgentFlag {
  /** The flag without its dashes. */
  readonly name: string;
  /** What it takes, as the help names it; none: a switch, off unless given. */
  readonly arg?: string;
  readonly repeatable?: true;
  /**
   * The environment variable read when the flag is not given (Linkerd's installer's, so its
   * DaemonSet's env carries over). `emptyIsUnset`: an empty value counts as not set.
   */
  readonly env?: { readonly name: string; readonly emptyIsUnset?: true };
  /** Its value when neither is given; none: unset, or made from other values (see `shown`). */
  readonly default?: string | readonly string[];
  /** The default as the help and the docs show it, where it is not `default` as it is. */
  readonly shown?: string;
  /** What it does; `code` marks are kept in the docs and dropped in the help. */
  readonly help: string;
}

/** How Linkerd's installer reads its variables (`${X:-default}`): empty is unset. */
const linkerdEnv = (name: string) => ({ name, emptyIsUnset: true }) as const;

export const agentFlags = [
  {
    name: "host-root",
    arg: "DIR",
    env: { name: "CONTAINER_MOUNT_PREFIX" },
    default: "/host",
    help: "where the host's filesystem is mounted",
  },
  { name: "net-dir", arg: "DIR", env: { name: "DEST_CNI_NET_DIR" }, default: "/etc/cni/net.d", help: "the host's CNI config dir" },
  { name: "bin-dir", arg: "DIR", env: { name: "DEST_CNI_BIN_DIR" }, default: "/opt/cni/bin", help: "the host's CNI bin dir" },
  {
    name: "extra-bin-dir",
    arg: "DIR",
    repeatable: true,
    default: [],
    shown: "none",
    help: "another dir the runtime finds plugins in (a host path, under `--host-root`): the chain's plugins are looked for there too",
  },
  {
    name: "kubeconfig-name",
    arg: "NAME",
    env: { name: "KUBECONFIG_FILE_NAME" },
    default: "ZZZ-meshcni-kubeconfig",
    help: "the plugin's kubeconfig file, in the net dir",
  },
  {
    name: "template",
    arg: "JSON",
    env: linkerdEnv("CNI_NETWORK_CONFIG"),
    shown: "meshcni's defaults",
    help: "the plugin's netconf entry; `__KUBECONFIG_FILEPATH__` is replaced",
  },
  { name: "template-file", arg: "PATH", env: linkerdEnv("CNI_NETWORK_CONFIG_FILE"), help: "the same, from a file" },
  {
    name: "config-map",
    arg: "NAME",
    env: { name: "MESHCNI_CONFIG_MAP", emptyIsUnset: true },
    help: "the ConfigMap in the agent's namespace whose `cni_network_config` the template is: read through the API at start and run with where it differs (kubelet's copy in the environment lags a change made while kubelet's watch was down); none: the template as given",
  },
  {
    name: "service-account-dir",
    arg: "DIR",
    default: "/var/run/secrets/kubernetes.io/serviceaccount",
    help: "the agent's projected token and `ca.crt`",
  },
  { name: "source-binary", arg: "PATH", shown: "this executable", help: "the binary to install" },
  {
    name: "listen",
    arg: "[HOST]:PORT",
    env: { name: "MESHCNI_LISTEN" },
    default: "127.0.0.1:9911",
    help: '/readyz, /healthz and /metrics; no HOST: every address; `""` turns them off (the DaemonSet\'s: `:9911`)',
  },
  { name: "resync-seconds", arg: "N", default: "10", help: "re-check everything this often, besides watching" },
  { name: "chain-by", arg: "MODE", default: "auto", help: `how meshcni goes in the chain: ${codeList(chainByChoices)}` },
  { name: "watch-timeout-seconds", arg: "N", default: "300", help: "each watch of the API asks to end after N to 2N s, then resumes" },
  {
    name: "on-stop",
    arg: "MODE",
    default: "auto",
    help: "on SIGTERM: `auto` (uninstall only when the agent's DaemonSet is gone or being deleted; a restart or rollout keeps everything), `keep`, `uninstall`",
  },
  {
    name: "node",
    arg: "NAME",
    env: linkerdEnv("NODE_NAME"),
    shown: "none",
    help: "this node; without it, no audit, repair, taint or plugin socket",
  },
  { name: "repair", arg: "POLICY", default: "redirect", help: `unprotected meshed pods: ${codeList(repairPolicies)}` },
  {
    name: "max-evictions-per-minute",
    arg: "N",
    default: "2",
    help: "with `--repair evict`, at most this many per minute on the node",
  },
  { name: "repair-exclude-namespaces", arg: "NS,NS", default: "", shown: "none", help: "never act on pods of these namespaces" },
  {
    name: "evict-namespaces",
    arg: "NS,NS",
    shown: "none: `--repair evict` needs it",
    help: "with `--repair evict`, the only namespaces it evicts in (skipping the others); `*`: any but kube-system, kube-public, kube-node-lease and the agent's own",
  },
  { name: "audit-seconds", arg: "N", default: "60", help: "audit every pod of the node this often, besides the watch" },
  { name: "state-dir", arg: "DIR", default: defaultStateDir, help: "the plugin's `state_dir` (a host path, under `--host-root`)" },
  {
    name: "netns-dir",
    arg: "DIR",
    repeatable: true,
    default: ["/var/run/netns"],
    help: "where the runtime keeps pod netns (a host path, under `--host-root`)",
  },
  {
    name: "cri-socket",
    arg: "PATH",
    default: "auto",
    help: "the container runtime's CRI socket on the host, asked for each pod's netns (`auto`: containerd's or CRI-O's default, the first there; `\"\"`: none)",
  },
  {
    name: "startup-taint",
    arg: "TAINT",
    shown: 'none (`""` too)',
    help: "remove `key[=value][:Effect]` from this node once ready",
  },
  { name: "restore-taint", help: "put the startup taint back while not ready" },
  { name: "log-level", arg: "LEVEL", env: linkerdEnv("LOG_LEVEL"), default: "info", help: codeList(agentLogLevels) },
  {
    name: "plugin-service-account",
    arg: "NS/NAME",
    shown: "`<POD_NAMESPACE or meshcni>/meshcni-plugin`",
    help: "whose token (minted, TokenRequest) the plugin's kubeconfig holds",
  },
  {
    name: "plugin-token-seconds",
    arg: "N",
    default: "3600",
    help: `the minted token's life (600 to ${maxPluginTokenSeconds}), renewed at 80%`,
  },
  {
    name: "agent-socket",
    arg: "PATH",
    shown: "`<state-dir>/agent/plugin.sock`",
    help: 'where the plugin asks the agent for pods (a host path); `""` turns it off; needs `--node`',
  },
] as const satisfies readonly AgentFlag[];

export type AgentFlagName = (typeof agentFlags)[number]["name"];

/** What the agent reads from its environment alone (no flag sets it). */
export const agentEnvironment: ReadonlyArray<{ names: readonly string[]; help: string }> = [
  { names: ["POD_NAMESPACE", "POD_NAME"], help: "the agent's own pod: never repaired; its DaemonSet decides `--on-stop auto`" },
  {
    names: ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PROTOCOL", "KUBE_CA_FILE", "SKIP_TLS_VERIFY"],
    help: "the API server's address (protocol `https`); `KUBE_CA_FILE` overrides the CA, `SKIP_TLS_VERIFY=true` skips verification",
  },
];

function codeList(words: readonly string[]): string {
  return words.map((word) => `\`${word}\``).join(", ");
}

type Flag = (typeof agentFlags)[number];
type SwitchName = Exclude<Flag, { arg: string }>["name"];
type ListName = Extract<Flag, { repeatable: true }>["name"];
type TextName = Exclude<Extract<Flag, { arg: string }>, { repeatable: true }>["name"];
type TextWithDefault = Extract<Flag, { default: string }>["name"];

/** The flags as read: each value given, else from its environment variable, else its default. */
export interface AgentFlagValues {
  text<N extends TextName>(name: N): N extends TextWithDefault ? string : string | undefined;
  list(name: ListName): string[];
  on(name: SwitchName): boolean;
}

/** Reads argv by the table (one line naming the flag on a refusal); the environment where a flag is not given. */
export function readAgentFlags(argv: string[], env: NodeJS.ProcessEnv): AgentFlagValues {
  const options = Object.fromEntries(
    agentFlags.map((flag: AgentFlag) => [
      flag.name,
      flag.arg === undefined ? { type: "boolean" as const } : { type: "string" as const, multiple: flag.repeatable === true },
    ]),
  );
  const { values } = parseFlags({ args: argv, strict: true, options });
  const declared = (name: string): AgentFlag => agentFlags.find((flag) => flag.name === name)!;
  return {
    text: ((name: TextName) => {
      const flag = declared(name);
      const fromEnv = flag.env && env[flag.env.name];
      const set = fromEnv !== undefined && !(flag.env?.emptyIsUnset && fromEnv === "");
      return (values[name] as string | undefined) ?? (set ? fromEnv : (flag.default as string | undefined));
    }) as AgentFlagValues["text"],
    list: (name) => (values[name] as string[] | undefined) ?? [...(declared(name).default as readonly string[])],
    on: (name) => values[name] === true,
  };
}

/** How the help and the docs show a flag's default. */
export function shownDefault(flag: AgentFlag): string | undefined {
  if (flag.shown !== undefined) return flag.shown;
  if (flag.default === undefined || flag.arg === undefined) return flag.arg === undefined ? "off" : undefined;
  if (Array.isArray(flag.default)) return flag.default.join(", ");
  return flag.default === "" ? '""' : (flag.default as string);
}
