import type { Socket } from "node:net";
import { errorMessage } from "../../errors.js";
import { libc } from "../../libc.js";

/** Whether a caller on the plugin's socket may ask: undefined yes, else why not (and its pid, when the kernel gave one). */
export type PeerCheck = (connection: Socket) => { reason: string; pid?: number } | undefined;

/**
 * Only root may ask (the plugin runs as root: the runtime execs it), by the kernel's word
 * for who connected (SO_PEERCRED), whatever the socket's file mode lets through: a mount of
 * its directory into another container, or a mode changed by hand.
 */
export async function rootPeersOnly(): Promise<PeerCheck> {
  const { peerCredentials } = await libc();
  return (connection) => {
    // Bun's and Node's unix sockets both keep their descriptor here.
    const fd = (connection as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
    if (typeof fd !== "number" || fd < 0) return { reason: "its descriptor is unknown, so its credentials are" };
    try {
      const { uid, pid } = peerCredentials(fd);
      // The pid apart from the reason: a caller connecting again and again is said once, not once per process.
      return uid === 0 ? undefined : { reason: `uid ${uid} is not root`, ...(pid ? { pid } : {}) };
    } catch (error) {
      return { reason: `its credentials cannot be read: ${errorMessage(error)}` };
    }
  };
}
