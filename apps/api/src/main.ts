// First: tracing must start before anything loads the modules it instruments.
import { tracing } from './ops/tracing-api';
import { createApp } from './app.factory';
import { loadConfig } from './config/app-config';
import { installApiShutdown } from './ops/api-shutdown';
import { createLogger } from './ops/logger.factory';
import { loadApiOpsConfig } from './ops/ops-config';

/** HTTP API process. */
async function bootstrap() {
  const config = loadConfig();
  const ops = loadApiOpsConfig();
  const logger = createLogger('api', config.LOG_LEVEL);
  logger.info(tracing.summary, `tracing ${tracing.summary.tracing}`);
  const app = await createApp(config, ops);
  installApiShutdown(app, logger, ops.SHUTDOWN_GRACE_MS, () => tracing.shutdown());
  await app.listen(config.PORT, config.HOST);
  logger.info({ host: config.HOST, port: config.PORT }, 'api listening');
}

bootstrap().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
