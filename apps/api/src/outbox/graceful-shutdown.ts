/**
 * Runs `stop` once on the first SIGTERM or SIGINT, then exits 0 (1 if stopping failed). Later
 * signals are ignored while stopping; the supervisor can always SIGKILL.
 *
 * `timeoutMs` bounds the graceful part: a stop that cannot finish (Redis unreachable, so BullMQ
 * can neither finish a job nor close its connections; a handler that never returns) would keep
 * the process alive until the supervisor's SIGKILL, or forever without one. Past it the process
 * exits 1 without waiting: what it still held is recovered as after a crash (the dispatcher's
 * leases expire and are reclaimed, the worker's active jobs are retried once their lock expires).
 */
export function onShutdown(
  stop: () => Promise<void>,
  logger: { info(msg: string): void; warn(msg: string): void },
  timeoutMs: number,
  /** What the stop is waiting on, named in the timeout's message (a hung stop logs nothing else). */
  pending: () => string | null = () => null,
): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info(`received ${signal}: stopping`);
    setTimeout(() => {
      const waiting = pending();
      logger.warn(
        `stop did not finish within ${timeoutMs} ms${waiting ? ` (waiting on ${waiting})` : ''}: ` +
          'exiting without it (recovered as after a crash)',
      );
      process.exit(1);
    }, timeoutMs).unref();
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.warn(`stop failed: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
