/**
 * The agent's periodic looks that share a period share one timer. Each timer is a wake of
 * the whole process, and after every wake Bun's allocator thread sweeps what the main thread
 * freed: on an idle node three timers a second (the dirs' signatures, the plugin socket's
 * lstat, the event loop's delay) were most of the agent's CPU. The timer does not hold the
 * process.
 */
const timers = new Map<number, { tasks: Set<() => void>; timer: NodeJS.Timeout }>();

/** Runs `task` every `everyMs` with the others of that period; returns its stop. */
export function everyTick(everyMs: number, task: () => void): () => void {
  let shared = timers.get(everyMs);
  if (!shared) {
    const tasks = new Set<() => void>();
    const timer = setInterval(() => {
      for (const each of [...tasks]) each();
    }, everyMs);
    timer.unref();
    shared = { tasks, timer };
    timers.set(everyMs, shared);
  }
  const { tasks, timer } = shared;
  const own = () => task();
  tasks.add(own);
  return () => {
    tasks.delete(own);
    if (tasks.size > 0 || timers.get(everyMs)?.timer !== timer) return;
    clearInterval(timer);
    timers.delete(everyMs);
  };
}
