import type { Logger } from "../log.js";
import type { PluginRequest } from "./request.js";

/**
 * GC: remove host-side state of attachments the runtime no longer knows. meshcni keeps
 * none yet (rules live in the pod netns and die with it), so there is nothing to remove.
 */
export async function gc(request: PluginRequest, log: Logger): Promise<void> {
  const valid = request.conf["cni.dev/valid-attachments"];
  log.debug("GC: no host-side state to collect", { validAttachments: Array.isArray(valid) ? valid.length : 0 });
}
