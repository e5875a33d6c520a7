import { loadSimConfig } from './config/sim-config';
import { buildSimServer } from './sim-server';
import { openSimState } from './state/open-sim-state';

// Past this, a stuck connection must not keep a SIGTERM'd process alive.
const SHUTDOWN_GRACE_MS = 5_000;

/** Platform simulator process: `node apps/platform-sim/dist/main.js` (PORT default 4010). */
async function main(): Promise<void> {
  const config = loadSimConfig();
  const state = await openSimState(config.SIM_STATE_FILE);
  const app = buildSimServer(config, state);
  try {
    await app.listen({ port: config.PORT, host: config.HOST });
  } catch (error) {
    await app.close(); // releases the state file
    throw error;
  }
  app.log.info(
    {
      host: config.HOST,
      port: config.PORT,
      adminAuth: config.SIM_ADMIN_TOKEN !== undefined,
      stateFile: state.stateFile ?? null,
      products: state.counters.productsCreated + state.counters.productsSeeded,
      billingEntries: state.aiVendor.entries().length,
    },
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
