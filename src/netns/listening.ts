import { readFileSync } from "node:fs";

/** The local ports of the TCP sockets listening in a /proc/net/tcp or tcp6 table (state 0A). */
export function listeningPorts(table: string): Set<number> {
  const ports = new Set<number>();
  for (const line of table.split("\n").slice(1)) {
    const [, local, , state] = line.trim().split(/\s+/);
    if (state === "0A" && local) ports.add(Number.parseInt(local.slice(local.lastIndexOf(":") + 1), 16));
  }
  return ports;
}

/** The TCP ports something listens on in this thread's netns (enter it first: inNetns). */
export function listeningHere(): Set<number> {
  const ports = new Set<number>();
  for (const table of ["tcp", "tcp6"]) {
    let text = "";
    try {
      text = readFileSync(`/proc/thread-self/net/${table}`, "utf8");
    } catch {
      // No IPv6 in this kernel: no tcp6 table.
    }
    for (const port of listeningPorts(text)) ports.add(port);
  }
  return ports;
}
