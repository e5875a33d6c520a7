import { loadSimConfig } from './config/sim-config';
import { buildSimServer } from './sim-server';

// Past this, a stuck connection must not keep a SIGTERM'd process alive.
const SHUTDOWN_GRACE_MS = 5_000;

/** Platform simulator process: `node apps/platform-sim/dist/main.js` (PORT default 4010). */
async function main(): Promise<void> {
  const config = loadSimConfig();
  const app = buildSimServer(config);
  await app.listen({ port: config.PORT, host: config.HOST });
  app.log.info(
    { host: config.HOST, port: config.PORT, adminAuth: config.SIM_ADMIN_TOKEN !== undefined },
    'platform-sim listening',
  );

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'platform-sim stopping');
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error((error as Error).message);
    process.exit(1);
  });
}
