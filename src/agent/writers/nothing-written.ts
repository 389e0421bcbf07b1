/** The most attachments remembered: a node's pods are a few hundred; one whose DEL never came is dropped, oldest first. */
const maxRemembered = 4096;

/**
 * The attachments whose ADD the agent answered with nothing to write (a pod that is not
 * meshed: no rule, no record). Their DEL has nothing of meshcni's to remove, so it needs no
 * writer: no netns entered, no backend listed. Only the agent's own answers are noted; an
 * attachment it does not know (its ADD answered before a restart, or written by the plugin)
 * goes to a writer as every DEL did.
 */
export class NothingWritten {
  private readonly attachments = new Set<string>();

  /** The ADD of this attachment wrote nothing: its next DEL needs no writer. */
  note(containerId: string, ifname: string): void {
    const key = `${containerId}/${ifname}`;
    this.attachments.delete(key);
    this.attachments.add(key);
    if (this.attachments.size > maxRemembered) this.attachments.delete(this.attachments.values().next().value ?? "");
  }

  /** Any other ADD of this attachment (written, or left to the plugin): its DEL goes to a writer. */
  forget(containerId: string, ifname: string): void {
    this.attachments.delete(`${containerId}/${ifname}`);
  }

  /** Whether this DEL's attachment was noted, forgetting it: once removed, a later DEL of it goes to a writer. */
  take(containerId: string, ifname: string): boolean {
    return this.attachments.delete(`${containerId}/${ifname}`);
  }
}
