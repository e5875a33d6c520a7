/**
 * Runs `stop` once on the first SIGTERM or SIGINT, then exits 0 (1 if stopping failed). Later
 * signals are ignored while stopping; the supervisor can always SIGKILL.
 */
export function onShutdown(stop: () => Promise<void>, log: (msg: string) => void): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log(`received ${signal}: stopping`);
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`stop failed: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
