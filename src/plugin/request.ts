import type { CniEnv } from "../cni/env.js";
import { resultAddresses } from "../cni/result.js";
import type { Backend } from "../iptables/backend.js";
import type { IptablesRunner } from "../iptables/exec.js";
import type { Family } from "../iptables/types.js";
import type { KubeReader, KubeReaderOptions } from "../kube/pod-reader.js";
import type { Logger } from "../log.js";
import type { NetConf } from "../mesh/netconf.js";
import { redirectFamilies } from "../mesh/pod.js";
import type { RecordStore } from "../state/records.js";

/** One invocation: what the runtime passed. */
export interface PluginRequest {
  env: CniEnv;
  conf: NetConf;
}

/**
 * Every I/O a verb may do, passed in so the verbs' decisions can be tested without root
 * (test/kit/fake-node.ts has fakes of each).
 */
export interface PluginDeps {
  log: Logger;
  kubeReader(options: KubeReaderOptions): Promise<KubeReader>;
  /** Loads a kubeconfig without asking the API; throws what makes it unusable. */
  checkKubeconfig(path: string): Promise<void>;
  /** The backend the netconf selects; "auto" is detected in the host netns. */
  backend(conf: NetConf): Promise<Backend>;
  /** A runner for the netconf's backend. */
  iptables(conf: NetConf): Promise<IptablesRunner>;
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
 * Starts getting a runner (loading execa, detecting the backend) in the host netns, so
 * that it overlaps the API lookup; its failure surfaces only when it is used.
 */
export function prepareIptables(request: PluginRequest, deps: PluginDeps): Promise<IptablesRunner> {
  const preparing = deps.iptables(request.conf);
  preparing.catch(() => undefined);
  return preparing;
}

/** Drops a prepared runner that is not needed after all (an unmeshed pod, a failed lookup). */
export async function discardIptables(preparing: Promise<IptablesRunner>): Promise<void> {
  (await preparing.catch(() => undefined))?.close();
}

/** Runs `action` with the prepared runner, inside the pod netns. */
export async function withPodIptables<T>(
  request: PluginRequest,
  deps: PluginDeps,
  preparing: Promise<IptablesRunner>,
  action: (runner: IptablesRunner) => Promise<T>,
): Promise<T> {
  const runner = await preparing;
  try {
    return await deps.inNetns(request.env.netns, () => action(runner));
  } finally {
    runner.close();
  }
}

/** Logs what a sweep of abandoned temp and lock files removed. */
export function swept(names: string[], deps: PluginDeps): void {
  if (names.length > 0) deps.log.info("removed files killed plugin processes left behind", { files: names });
}
