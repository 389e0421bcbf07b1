import { CniError } from "../cni/errors.js";
import { errorMessage } from "../errors.js";
import { NetnsGoneError, OwnNetnsError } from "../netns/enter.js";
import type { Backend } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import { swept } from "./apply.js";
import { familiesFor, inPodNetns, type PluginDeps, type PluginRequest, prepareRedirector, redirectorSettings } from "./request.js";

/**
 * DEL: remove our chains and the jumps into them, without the API (it may be down, the
 * kubeconfig gone, the pod deleted), then the attachment's record. Nothing there, or no
 * netns, is success. The rules belong to the netns while another attachment of the same
 * container is recorded there (Multus's secondary networks), so they stay until its DEL.
 */
export async function del(request: PluginRequest, deps: PluginDeps): Promise<undefined> {
  const { conf, env } = request;
  if (conf.linkerd.simulate) return;
  const records = deps.records(conf.state_dir);
  swept(records.sweep(), deps);
  const attachment = { containerID: env.containerId, ifname: env.ifname };
  // After any write of this attachment still in hand (an agent's writer the plugin stopped waiting for). A DEL
  // after an uninstall (the state dir emptied: no record, no locks dir) has none to wait for and puts nothing back.
  const createDir = records.forContainer(env.containerId).length > 0;
  const release = await records.lock(attachment, { createDir }).catch((error: unknown) => {
    // Held past its bound: the runtime tries again. A lock file that cannot be had at all must not keep a pod in teardown.
    if (error instanceof CniError) throw error;
    deps.log.warn("removing without the attachment's lock", { reason: errorMessage(error) });
    return () => undefined;
  });
  try {
    const container = records.forContainer(env.containerId);
    const others = container.filter((record) => record.ifname !== env.ifname && record.netns === env.netns);
    if (!env.netns) deps.log.info("no CNI_NETNS: the netns is gone, nothing to remove");
    else if (others.length > 0)
      deps.log.info("keeping the redirect: other attachments of this netns remain", { ifnames: others.map((record) => record.ifname) });
    else await removeRules(request, deps, container.find((record) => record.ifname === env.ifname)?.backend);
    records.remove(attachment);
  } finally {
    release();
  }
}

/** Removes the redirect with the netconf's backend, and with the one ADD recorded where that differs. */
async function removeRules(request: PluginRequest, deps: PluginDeps, recorded: Backend | undefined): Promise<void> {
  try {
    await inPodNetns(request, deps, prepareRedirector(request, deps, { leaveStateDir: true }), async (redirector) => {
      const families = familiesFor(request.conf);
      const removed = await redirector.remove(families);
      for (const family of families)
        deps.log.info(removed.includes(family) ? "redirect removed" : "no redirect to remove", { family, backend: redirector.backend });
      if (recorded !== undefined && recorded !== redirector.backend) await removeRecorded(request, deps, recorded, families);
    });
  } catch (error) {
    if (error instanceof NetnsGoneError) deps.log.info("netns is gone, nothing to remove", { reason: error.message });
    // Never touch the host's tables; failing would leave the pod stuck in teardown for nothing.
    else if (error instanceof OwnNetnsError) deps.log.warn("not removing rules", { reason: error.message });
    else throw error;
  }
}

/**
 * A pod ADDed before the node's iptables-mode changed, whose redirect the agent has not moved
 * yet: its rules are in the backend its record names. Its netns is going away, so what cannot
 * be removed there (that backend's binaries gone from the host) is said, not failed on.
 */
async function removeRecorded(request: PluginRequest, deps: PluginDeps, backend: Backend, families: Family[]): Promise<void> {
  try {
    const redirector = await deps.redirector({ ...redirectorSettings(request.conf), mode: backend, leaveStateDir: true });
    try {
      const removed = await redirector.remove(families);
      for (const family of removed) deps.log.info("redirect removed from the backend ADD recorded", { family, backend });
    } finally {
      redirector.close();
    }
  } catch (error) {
    deps.log.warn("could not remove the redirect from the backend ADD recorded", { backend, reason: errorMessage(error) });
  }
}
