/**
 * Bounds a whole invocation: every wait inside has its own deadline (API, iptables), and
 * this catches whatever still hangs, so no input can keep a pod start waiting forever.
 * Returns the function that disarms it.
 */
export function startWatchdog(ms: number, expire: () => void): () => void {
  const timer = setTimeout(expire, ms);
  // It must not keep a finished invocation alive.
  timer.unref();
  return () => clearTimeout(timer);
}
