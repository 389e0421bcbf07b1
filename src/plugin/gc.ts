import type { Logger } from "../log.js";
import { collectRecords } from "./records.js";
import type { PluginRequest } from "./request.js";

/**
 * GC: remove host-side state of attachments the runtime no longer knows: the ADD records
 * (rules live in the pod netns and die with it). Without the list, nothing is removed.
 */
export async function gc(request: PluginRequest, log: Logger): Promise<void> {
  const valid = request.conf["cni.dev/valid-attachments"];
  if (!valid) {
    log.info("GC without cni.dev/valid-attachments: nothing removed");
    return;
  }
  const removed = collectRecords(request.conf.state_dir, valid);
  log.info("GC done", { validAttachments: valid.length, recordsRemoved: removed });
}
