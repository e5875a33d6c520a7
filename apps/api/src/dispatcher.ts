// First: tracing must start before anything loads the modules it instruments.
import { tracing } from './ops/tracing-dispatcher';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { loadOutboxConfig } from './config/outbox-config';
import { DispatcherProcess } from './outbox/dispatcher-process.service';
import { onShutdown } from './outbox/graceful-shutdown';
import { createLogger, logLevelFromEnv, PinoNestLogger } from './ops/logger.factory';

/** Outbox dispatcher process: the dispatcher role of the composition root (see DispatcherProcess). */
async function main() {
  const config = loadOutboxConfig();
  const logger = createLogger('dispatcher', logLevelFromEnv());
  logger.info(tracing.summary, `tracing ${tracing.summary.tracing}`);
  const app = await NestFactory.createApplicationContext(AppModule.forRole('dispatcher', config), {
    logger: new PinoNestLogger(logger.child({ context: 'nest' })),
    abortOnError: false,
  });
  const dispatcher = app.get(DispatcherProcess);
  onShutdown(
    async () => {
      await dispatcher.stop();
      await app.close();
      await tracing.shutdown();
    },
    { info: (msg) => logger.info(msg), warn: (msg) => logger.warn(msg) },
    config.OUTBOX_STOP_TIMEOUT_MS,
  );
  await dispatcher.start();
}

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
