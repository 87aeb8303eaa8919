/**
 * Lets a local stack end with the process that started it (`EXIT_WITH_PID`, set by spawnLocalStack):
 * a test run killed from outside (a time limit, SIGKILL of jest) runs no exit handler that could stop
 * the stacks it spawned, and such stacks, each with its DynamoDB Local JVM, were found busy 50 minutes
 * later. The stack cannot learn of its owner's death by a signal, so it asks: `kill(pid, 0)` every second.
 */

/** Whether process `pid` exists (EPERM: it does, but belongs to another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Stops watching. */
export type StopWatching = () => void;

/**
 * Calls `onGone` once, at the first check that finds process `pid` gone (the first check after
 * `intervalMs`). The timer is unref'd: the watch never keeps this process alive by itself.
 */
export function watchOwner(pid: number, onGone: () => void, intervalMs = 1000): StopWatching {
  const timer = setInterval(() => {
    if (processAlive(pid)) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
