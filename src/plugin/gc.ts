import type { PluginDeps, PluginRequest } from "./request.js";

/**
 * GC: remove host-side state of attachments the runtime no longer knows: the ADD records
 * (rules live in the pod netns and die with it). Without the list, nothing is removed.
 */
export async function gc(request: PluginRequest, deps: PluginDeps): Promise<undefined> {
  const valid = request.conf["cni.dev/valid-attachments"];
  if (!valid) {
    deps.log.info("GC without cni.dev/valid-attachments: nothing removed");
    return;
  }
  const removed = deps.records(request.conf.state_dir).collect(valid);
  deps.log.info("GC done", { validAttachments: valid.length, recordsRemoved: removed });
}
