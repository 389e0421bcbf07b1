/** What one connection may hold: a plugin asks a few questions in 2 s at most, then goes. */
export const socketBounds = {
  /** Connections at once; more are closed as they come (their plugins ask the API themselves). */
  connections: 256,
  /** A connection that sends nothing and is answered nothing for this long is closed. */
  idleMs: 5000,
  /** Questions asked and not yet answered on one connection. */
  pending: 16,
  /** A question must be whole within this of its first byte (one sent a byte at a time holds no connection). */
  lineMs: 2000,
  /** Bytes of unfinished questions held across connections (each at most maxAskBytes). */
  heldBytes: 4 << 20,
  /** How often the socket's path is looked at, to take it back from whatever took its place. */
  reclaimMs: 1000,
  /** Take-backs after the first are said at most this often, with their count: one put back at once, each time, would fill the log. */
  reclaimSaidEveryMs: 60_000,
};
export type SocketBounds = typeof socketBounds;

/** What the socket counts for the agent's metrics. */
export interface SocketCounts {
  /** Each take-back (meshcni_plugin_socket_taken_back_total): the log says them once a minute. */
  takenBack(): void;
  /** Each connection closed as it came, `connections` being open (meshcni_plugin_socket_dropped_total). */
  dropped(): void;
}
