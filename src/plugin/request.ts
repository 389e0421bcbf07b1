import type { CniEnv } from "../cni/env.js";
import { resultAddresses } from "../cni/result.js";
import type { KubeReader, KubeReaderOptions } from "../kube/pod-reader.js";
import type { Logger } from "../log.js";
import type { NetConf } from "../mesh/netconf.js";
import { redirectFamilies } from "../mesh/pod.js";
import type { Backend, IptablesMode, Redirector } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import type { RecordStore } from "../state/records.js";

/** What a redirector is made from: the netconf's iptables mode, wait flag and state dir (or the same, decided by the agent). */
export interface RedirectorSettings {
  mode: IptablesMode;
  stateDir: string;
  wait: boolean;
  /**
   * DEL: write nothing in the state dir (no detection cache, no locks dir): a DEL after an
   * uninstall must leave the dir the agent emptied as it is.
   */
  leaveStateDir?: boolean;
}

export const redirectorSettings = (conf: NetConf): RedirectorSettings => ({
  mode: conf.linkerd["iptables-mode"],
  stateDir: conf.state_dir,
  wait: conf.linkerd["use-wait-flag"],
});

/** One invocation: what the runtime passed. */
export interface PluginRequest {
  env: CniEnv;
  conf: NetConf;
}

/**
 * Every I/O a verb may do, passed in so the verbs' decisions can be tested without root
 * (test/kit/plugin/fake-node.ts has fakes of each).
 */
export interface PluginDeps {
  log: Logger;
  kubeReader(options: KubeReaderOptions): Promise<KubeReader>;
  /** The same reads, asked of the agent on its socket; throws AgentUnavailableError when it cannot answer. */
  agentReader(socket: string, timeoutMs: number): Promise<KubeReader>;
  /** Loads a kubeconfig without asking the API; throws what makes it unusable. */
  checkKubeconfig(path: string): Promise<void>;
  /** The backend the netconf selects; "auto" is detected in the host netns. */
  backend(conf: NetConf): Promise<Backend>;
  /** What writes the redirect with the netconf's backend. */
  redirector(settings: RedirectorSettings): Promise<Redirector>;
  /** Whether an executable of that name is on the runner's search path. */
  binaryAvailable(name: string): boolean;
  /** Throws unless `path` is a network namespace other than the plugin's own (the host's). */
  checkNetns(path: string): void;
  inNetns<T>(path: string, action: () => Promise<T>): Promise<T>;
  records(stateDir: string): RecordStore;
}

/** A verb: what it prints on success (a result, or nothing), or it throws. */
export type VerbHandler = (request: PluginRequest, deps: PluginDeps) => Promise<Record<string, unknown> | undefined>;

/** The families to redirect: by the netconf and the addresses the primary CNI gave the pod. */
export function familiesFor(conf: NetConf): Family[] {
  return redirectFamilies(conf.linkerd, resultAddresses(conf.prevResult));
}

/**
 * Starts getting a redirector (loading its backend's code, detecting the backend) in the
 * host netns, so that it overlaps the API lookup; its failure surfaces only when it is used.
 * `backend`: the one ADD recorded, where that, not the netconf's, holds the rules.
 */
export function prepareRedirector(
  request: PluginRequest,
  deps: PluginDeps,
  options: { backend?: Backend | undefined; leaveStateDir?: boolean } = {},
): Promise<Redirector> {
  const { backend, leaveStateDir } = options;
  const settings = {
    ...redirectorSettings(request.conf),
    ...(backend ? { mode: backend } : {}),
    ...(leaveStateDir ? { leaveStateDir } : {}),
  };
  const preparing = deps.redirector(settings);
  preparing.catch(() => undefined);
  return preparing;
}

/** Drops a prepared redirector that is not needed after all (an unmeshed pod, a failed lookup). */
export async function discardRedirector(preparing: Promise<Redirector>): Promise<void> {
  (await preparing.catch(() => undefined))?.close();
}

/** Runs `action` with the prepared redirector, inside the pod netns. */
export async function inPodNetns<T>(
  request: PluginRequest,
  deps: PluginDeps,
  preparing: Promise<Redirector>,
  action: (redirector: Redirector) => Promise<T>,
): Promise<T> {
  const redirector = await preparing;
  try {
    return await deps.inNetns(request.env.netns, () => action(redirector));
  } finally {
    redirector.close();
  }
}
