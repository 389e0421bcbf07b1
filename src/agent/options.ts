import { join } from "node:path";
import { repairPolicies } from "../audit/repair.js";
import { numberFlag, oneOf } from "../flags.js";
import { chainByChoices } from "../installer/dropin.js";
import type { InstallOptions } from "../installer/options.js";
import { type AgentLogLevel, agentLogLevels } from "../log.js";
import type { PodKey } from "../pod-key.js";
import { parseTaint, type TaintSpec } from "../taint-spec.js";
import { readAgentFlags } from "./flags.js";
import { maxPluginTokenSeconds } from "./plugin-token.js";
import type { SweepOptions } from "./sweeps/options.js";

/** What a stop does: `auto` asks whether the agent's DaemonSet is still there (a restart) or gone (an uninstall). */
const stopModes = ["auto", "keep", "uninstall"] as const;
export type StopMode = (typeof stopModes)[number];

/** The API server's address and how to trust it (KUBERNETES_SERVICE_*, KUBE_CA_FILE, SKIP_TLS_VERIFY). */
export interface ApiOptions {
  protocol: string;
  host: string | undefined;
  port: string | undefined;
  caFile: string | undefined;
  skipTlsVerify: boolean;
}

/**
 * The agent's settings: flags, else the environment variables Linkerd's installer reads
 * (so its DaemonSet env carries over), else defaults. What it installs on the host is the
 * installer's (InstallOptions); the rest is the agent's own.
 */
export interface AgentOptions {
  install: InstallOptions;
  /** Where /readyz, /healthz and /metrics listen (host "": every address); undefined turns them off. */
  listen: { host: string; port: number } | undefined;
  onStop: StopMode;
  resyncSeconds: number;
  /** `auto`: a drop-in where the runtime says it loads it, else the entry in the active config; `conflist`: the entry always. */
  chainBy: (typeof chainByChoices)[number];
  /** Each watch of the API asks for a timeoutSeconds between this and twice this (client-go: 5 minutes). */
  watchTimeoutSeconds: number;
  logLevel: AgentLogLevel;
  api: ApiOptions;
  /** The agent's projected token and CA. */
  serviceAccountDir: string;
  /** The node this agent runs on; the plugin's socket, the sweeps and the taint need it. */
  node: string | undefined;
  /** The agent's own pod (never repaired; its DaemonSet decides --on-stop auto). */
  self: PodKey | undefined;
  /** The ConfigMap (in the agent's namespace) the template is checked against through the API (--config-map). */
  configMap: string | undefined;
  sweep: SweepOptions;
  startupTaint: { spec: TaintSpec; restore: boolean } | undefined;
  /** The ServiceAccount whose minted token goes into the plugin's kubeconfig, and the token's life. */
  pluginToken: { serviceAccount: { namespace: string; name: string }; seconds: number };
}

/** HOST:PORT (an IPv6 host in brackets; no host: every address, IPv6 and IPv4), or "" for none. */
export function parseListen(text: string): AgentOptions["listen"] {
  if (text === "") return undefined;
  const at = text.lastIndexOf(":");
  const host = text.slice(0, at).replace(/^\[|\]$/g, "");
  const port = /^\d{1,5}$/.test(text.slice(at + 1)) ? Number(text.slice(at + 1)) : Number.NaN;
  if (at < 0 || !(port >= 0 && port <= 65535)) throw new Error(`--listen must be HOST:PORT, not ${JSON.stringify(text)}`);
  return { host, port };
}

/** NS,NS as a list of names (spaces and empty entries dropped). */
const namespaceList = (text: string) =>
  text
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);

/**
 * --evict-namespaces: with --repair evict the operator names where evictions may go (every
 * namespace by default reached Linkerd's control plane and meshcni's own agents); `*` is any
 * (undefined). Without evict it changes nothing.
 */
function evictNamespacesOf(repair: string, text: string | undefined): string[] | undefined {
  if (repair === "evict" && !text)
    throw new Error("--repair evict needs --evict-namespaces NS,NS: the namespaces it may evict pods in ('*': any but the system ones)");
  return text && text !== "*" ? namespaceList(text) : undefined;
}

function serviceAccountOf(text: string): AgentOptions["pluginToken"]["serviceAccount"] {
  const match = /^([a-z0-9-]{1,63})\/([a-z0-9.-]{1,253})$/.exec(text);
  if (!match) throw new Error(`--plugin-service-account must be NAMESPACE/NAME, not ${JSON.stringify(text)}`);
  return { namespace: match[1]!, name: match[2]! };
}

/** --config-map: a ConfigMap's name, in the agent's own namespace (POD_NAMESPACE). */
function configMapOf(name: string | undefined, namespace: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (!/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/.test(name))
    throw new Error(`--config-map must be a ConfigMap's name, not ${JSON.stringify(name)}`);
  if (!namespace) throw new Error("--config-map needs POD_NAMESPACE: the ConfigMap is read in the agent's own namespace");
  return name;
}

/** Reads the flags and environment; throws one line naming the bad flag and value. */
export function parseAgentOptions(argv: string[], env: NodeJS.ProcessEnv, execPath: string): AgentOptions {
  const flags = readAgentFlags(argv, env);
  const positive = (value: number) => Number.isFinite(value) && value > 0;
  const serviceAccountDir = flags.text("service-account-dir");
  const node = flags.text("node");
  const stateDir = flags.text("state-dir");
  const socketFlag = flags.text("agent-socket");
  const startupTaint = flags.text("startup-taint");
  const socket = socketFlag === "" ? undefined : (socketFlag ?? join(stateDir, "agent", "plugin.sock"));
  return {
    install: {
      hostRoot: flags.text("host-root"),
      netDir: flags.text("net-dir"),
      binDir: flags.text("bin-dir"),
      extraBinDirs: flags.list("extra-bin-dir"),
      kubeconfigName: flags.text("kubeconfig-name"),
      template: flags.text("template"),
      templateFile: flags.text("template-file"),
      sourceBinary: flags.text("source-binary") ?? execPath,
      stateDir,
      // Only an agent with a node caches its pods and serves them.
      agentSocket: node ? socket : undefined,
    },
    listen: parseListen(flags.text("listen")),
    onStop: oneOf("on-stop", flags.text("on-stop"), stopModes),
    chainBy: oneOf("chain-by", flags.text("chain-by"), chainByChoices),
    resyncSeconds: numberFlag("resync-seconds", flags.text("resync-seconds"), positive, "a positive number"),
    watchTimeoutSeconds: numberFlag(
      "watch-timeout-seconds",
      flags.text("watch-timeout-seconds"),
      (n) => Number.isInteger(n) && n >= 1,
      "a whole number of seconds, at least 1",
    ),
    logLevel: oneOf("log-level", flags.text("log-level"), agentLogLevels),
    api: {
      protocol: env.KUBERNETES_SERVICE_PROTOCOL || "https",
      host: env.KUBERNETES_SERVICE_HOST || undefined,
      port: env.KUBERNETES_SERVICE_PORT || undefined,
      caFile: env.KUBE_CA_FILE || join(serviceAccountDir, "ca.crt"),
      skipTlsVerify: env.SKIP_TLS_VERIFY === "true",
    },
    serviceAccountDir,
    node,
    self: env.POD_NAMESPACE && env.POD_NAME ? { namespace: env.POD_NAMESPACE, name: env.POD_NAME } : undefined,
    configMap: configMapOf(flags.text("config-map"), env.POD_NAMESPACE),
    sweep: {
      repair: oneOf("repair", flags.text("repair"), repairPolicies),
      maxEvictionsPerMinute: numberFlag(
        "max-evictions-per-minute",
        flags.text("max-evictions-per-minute"),
        (n) => Number.isInteger(n) && n >= 0,
        "a whole number",
      ),
      excludeNamespaces: namespaceList(flags.text("repair-exclude-namespaces")),
      evictNamespaces: evictNamespacesOf(flags.text("repair"), flags.text("evict-namespaces")),
      auditSeconds: numberFlag("audit-seconds", flags.text("audit-seconds"), positive, "a positive number"),
      netnsDirs: flags.list("netns-dir"),
      criSocket: flags.text("cri-socket"),
    },
    // "" is none, as for `meshcni manifests`.
    startupTaint: startupTaint ? { spec: parseTaint(startupTaint), restore: flags.on("restore-taint") } : undefined,
    pluginToken: {
      serviceAccount: serviceAccountOf(flags.text("plugin-service-account") ?? `${env.POD_NAMESPACE || "meshcni"}/meshcni-plugin`),
      seconds: numberFlag(
        "plugin-token-seconds",
        flags.text("plugin-token-seconds"),
        (n) => Number.isInteger(n) && n >= 600 && n <= maxPluginTokenSeconds,
        `a whole number of seconds from 600 to ${maxPluginTokenSeconds}`,
      ),
    },
  };
}
