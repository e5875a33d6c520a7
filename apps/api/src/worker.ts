// First: tracing must start before anything loads the modules it instruments.
import { tracing } from './ops/tracing-worker';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { loadOutboxConfig } from './config/outbox-config';
import { onShutdown } from './outbox/graceful-shutdown';
import { WorkerProcess } from './outbox/worker-process.service';
import { createLogger, logLevelFromEnv, PinoNestLogger } from './ops/logger.factory';

/** BullMQ worker process: the worker role of the composition root (see WorkerProcess). */
async function main() {
  const config = loadOutboxConfig();
  const logger = createLogger('worker', logLevelFromEnv());
  logger.info(tracing.summary, `tracing ${tracing.summary.tracing}`);
  const app = await NestFactory.createApplicationContext(AppModule.forRole('worker', config), {
    logger: new PinoNestLogger(logger.child({ context: 'nest' })),
    abortOnError: false,
  });
  const worker = app.get(WorkerProcess);
  await worker.start();
  onShutdown(
    async () => {
      await worker.stop();
      await app.close();
      await tracing.shutdown();
    },
    { info: (msg) => logger.info(msg), warn: (msg) => logger.warn(msg) },
    config.OUTBOX_STOP_TIMEOUT_MS,
    () => worker.stopPending(),
  );
  worker.announceReady();
}

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
