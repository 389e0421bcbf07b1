import type { CniEnv } from "../cni/env.js";
import { resultAddresses } from "../cni/result.js";
import type { IptablesRunner } from "../iptables/exec.js";
import type { Family } from "../iptables/types.js";
import type { KubeReader, KubeReaderOptions } from "../kube/client.js";
import type { Logger } from "../log.js";
import type { NetConf } from "./netconf.js";

/** One invocation: what the runtime passed. */
export interface PluginRequest {
  env: CniEnv;
  conf: NetConf;
}

/** The I/O a verb may do, passed in so the verbs' decisions can be tested without root. */
export interface PluginDeps {
  log: Logger;
  kubeReader(options: KubeReaderOptions): Promise<KubeReader>;
  /** Resolves the backend (detecting it in the host netns for "auto") and returns a runner. */
  iptables(conf: NetConf): Promise<IptablesRunner>;
  inNetns<T>(path: string, action: () => Promise<T>): Promise<T>;
}

/** IPv4 always; IPv6 too when the netconf asks or the pod got an IPv6 address. */
export function familiesFor(conf: NetConf): Family[] {
  const hasIpv6 = resultAddresses(conf.prevResult).some((address) => address.includes(":"));
  return conf.linkerd.ipv6 || hasIpv6 ? ["ipv4", "ipv6"] : ["ipv4"];
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
