// Who listens on the agent's socket, as the plugin proves it before it passes a pod's netns or
// believes an answer. The socket is a file in the host's state dir: any pod given a hostPath
// to it, root with no capabilities, could put its own listener there (issue 57). The agent is
// root, on the host's network, holding CAP_NET_ADMIN and CAP_SYS_ADMIN (it enters pods' netns
// and writes their rules): a process that holds all of that owns the node already.
import { readFileSync, statSync } from "node:fs";

/** CAP_NET_ADMIN (12) and CAP_SYS_ADMIN (21), as /proc/PID/status's CapEff bits. */
const agentCapabilities = (1n << 12n) | (1n << 21n);

/** What the kernel and /proc say of the process listening at a connected unix socket. */
export interface ListenerFacts {
  /** From SO_PEERCRED: 0 when the listener is outside the plugin's PID namespace. */
  pid: number;
  uid: number;
  /** Its effective capabilities; undefined when /proc would not say. */
  capEff: bigint | undefined;
  /** Whether it is in the plugin's own network namespace (the host's); undefined when /proc would not say. */
  sameNetns: boolean | undefined;
}

/** Why the listener is not the node's agent, or undefined when it is what the agent is. */
export function listenerProblem({ pid, uid, capEff, sameNetns }: ListenerFacts): string | undefined {
  if (pid <= 0) return "it is outside the host's PID namespace, so nothing of it can be checked";
  if (uid !== 0) return `it (pid ${pid}) runs as uid ${uid}, not root`;
  if (capEff === undefined) return `its capabilities cannot be read (pid ${pid})`;
  if ((capEff & agentCapabilities) !== agentCapabilities)
    return `it (pid ${pid}) lacks CAP_NET_ADMIN or CAP_SYS_ADMIN, which the agent holds`;
  if (sameNetns !== true) return `it (pid ${pid}) is not in the host's network namespace, where the agent runs`;
  return undefined;
}

/** The listener's facts: its credentials as the kernel gave them (`credentials`), the rest from /proc. */
export function listenerFacts(credentials: { pid: number; uid: number }): ListenerFacts {
  const { pid, uid } = credentials;
  const read = <T>(what: () => T): T | undefined => {
    try {
      return what();
    } catch {
      return undefined; // gone, or not ours to read
    }
  };
  const capEff = read(() => {
    const hex = /^CapEff:\s+([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return hex === undefined ? undefined : BigInt(`0x${hex}`);
  });
  const [theirs, ours] = [read(() => statSync(`/proc/${pid}/ns/net`)), read(() => statSync("/proc/self/ns/net"))];
  const sameNetns = theirs && ours ? theirs.dev === ours.dev && theirs.ino === ours.ino : undefined;
  return { pid, uid, capEff, sameNetns };
}
