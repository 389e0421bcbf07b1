import type { V1Pod } from "@kubernetes/client-node";
import { decisionFields } from "../../mesh/pod.js";

/** The most pods remembered: a node's pods are a few hundred; a pod whose removal was never heard is dropped, oldest first. */
const maxRemembered = 4096;

/** The pod's addresses as its status gives them (kubelet takes them from the sandbox the chain's ADD set up). */
function statusAddresses(pod: V1Pod): string[] {
  const listed = pod.status?.podIPs?.map((entry) => entry.ip) ?? [];
  return listed.length > 0 ? listed : pod.status?.podIP ? [pod.status.podIP] : [];
}

/**
 * The meshed pods whose ADD this agent's writers carried out, each with what the decision
 * read of it and the addresses the chain gave its sandbox. A pod event that changes neither
 * (a container started, the pod Ready) needs no sweep to tell that the pod has its redirect:
 * the writer put it there, in a netns tied to the pod, a moment before. Anything else (the
 * decision's fields changed, an address the ADD did not give: another sandbox) and the pod
 * is judged by a sweep again, as are pods whose ADD the agent did not write; every pod is
 * still read at each full sweep.
 */
export class AddsWritten {
  private readonly written = new Map<string, { fields: string; addresses: Set<string> }>();

  /** An ADD written for `pod` (as the decision read it, from the cache) into the sandbox given `addresses` (`ip/prefix`). */
  note(pod: V1Pod, addresses: string[]): void {
    const uid = pod.metadata?.uid;
    if (!uid || addresses.length === 0) return;
    this.written.delete(uid);
    this.written.set(uid, {
      fields: JSON.stringify(decisionFields(pod)),
      addresses: new Set(addresses.map((address) => address.replace(/\/.*$/, ""))),
    });
    if (this.written.size > maxRemembered) this.forget(this.written.keys().next().value ?? "");
  }

  /** Whether the pod is still as its written ADD had it (the same fields, only addresses that ADD gave); once not, never again. */
  covers(pod: V1Pod): boolean {
    const uid = pod.metadata?.uid ?? "";
    const written = this.written.get(uid);
    if (!written) return false;
    const addresses = statusAddresses(pod);
    const same =
      addresses.length > 0 &&
      addresses.every((address) => written.addresses.has(address)) &&
      JSON.stringify(decisionFields(pod)) === written.fields;
    if (!same) this.forget(uid);
    return same;
  }

  forget(uid: string): void {
    this.written.delete(uid);
  }
}
