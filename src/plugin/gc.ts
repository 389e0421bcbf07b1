import { swept } from "./apply.js";
import type { PluginDeps, PluginRequest } from "./request.js";

/**
 * GC: remove host-side state of attachments the runtime no longer knows: the ADD records
 * (rules live in the pod netns and die with it). Without the list, no record is removed.
 * Files killed plugin processes left are swept either way.
 */
export async function gc(request: PluginRequest, deps: PluginDeps): Promise<undefined> {
  const records = deps.records(request.conf.state_dir);
  swept(records.sweep(), deps);
  const valid = request.conf["cni.dev/valid-attachments"];
  if (!valid) {
    deps.log.info("GC without cni.dev/valid-attachments: nothing removed");
    return;
  }
  const removed = records.collect(valid);
  deps.log.info("GC done", { validAttachments: valid.length, recordsRemoved: removed });
}
