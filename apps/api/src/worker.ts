import 'reflect-metadata';
import { Database } from '@listing/db';
import {
  bullmqConnection,
  JobRegistry,
  OutboxFaults,
  OutboxWorkerRuntime,
  redisOptionsFromUrl,
  RETENTION_QUEUE,
  retentionJob,
  RetentionService,
} from '@listing/outbox';
import { Queue } from 'bullmq';
import { loadOutboxConfig, outboxDatabaseUrl, type OutboxConfig } from './config/outbox-config';
import { registerCapabilityHandlers } from './modules/platform/capability-handlers';
import { registerMediaJobHandlers } from './modules/media/media-job-registration';
import { onShutdown } from './outbox/graceful-shutdown';
import { createLogger, logLevelFromEnv, outboxLogger } from './ops/logger.factory';
import { startRoleOps } from './ops/role-ops';
import { TestEffectHandlers } from './outbox/test-effect.job';

/** BullMQ worker process: runs the registered job handlers (re-entrant, inbox-guarded). */
async function main() {
  const config = loadOutboxConfig();
  const logger = outboxLogger(createLogger('worker', logLevelFromEnv()));
  const db = new Database({
    connectionString: outboxDatabaseUrl(config),
    max: config.DATABASE_POOL_SIZE,
    applicationName: 'worker',
  });

  const registry = new JobRegistry();
  const retention = new RetentionService(db, {
    dispatchedRetentionMs: config.OUTBOX_RETENTION_DISPATCHED_MS,
    inboxRetentionMs: config.OUTBOX_RETENTION_INBOX_MS,
    batchSize: config.OUTBOX_RETENTION_BATCH,
    maxBatches: config.OUTBOX_RETENTION_MAX_BATCHES,
  });
  registry.handle(retentionJob, async () => {
    const report = await retention.run();
    logger.info('retention run', { ...report });
    return report;
  });
  if (config.NODE_ENV === 'test' && config.OUTBOX_TEST_JOBS === '1') {
    registry.registerHandlers(new TestEffectHandlers(db, config.OUTBOX_TEST_EFFECT_MODE));
  }
  // Domain handlers register here as the features arrive.
  registerMediaJobHandlers(registry, db, logger);
  registerCapabilityHandlers(registry, db);

  const queues = config.OUTBOX_WORKER_QUEUES?.split(',')
    .map((q) => q.trim())
    .filter(Boolean);
  const runtime = new OutboxWorkerRuntime({
    db,
    registry,
    connection: redisOptionsFromUrl(config.REDIS_URL),
    prefix: config.BULLMQ_PREFIX,
    concurrency: config.OUTBOX_WORKER_CONCURRENCY,
    queues,
    failedSweepIntervalMs: config.OUTBOX_FAILED_SWEEP_INTERVAL_MS,
    lockDurationMs: config.OUTBOX_WORKER_LOCK_MS,
    stalledIntervalMs: config.OUTBOX_WORKER_LOCK_MS,
    faults: OutboxFaults.fromEnv(),
    logger,
  });
  // Metrics and per-job logs (before start), OPS_PORT listener; see apps/api/src/ops.
  const ops = await startRoleOps({
    role: 'worker',
    db,
    redisUrl: config.REDIS_URL,
    logger: logger.pino,
    runtime,
  });
  await runtime.start();
  if (!queues || queues.includes(RETENTION_QUEUE)) await scheduleRetention(config);

  onShutdown(
    async () => {
      ops.draining();
      await runtime.close();
      await db.close();
      await ops.close();
    },
    logger,
    config.OUTBOX_STOP_TIMEOUT_MS,
  );
  logger.info('worker ready', { queues: queues ?? registry.queues() });
}

/** One repeatable retention job per deployment (upsert is idempotent across workers). */
async function scheduleRetention(config: OutboxConfig) {
  const queue = new Queue(RETENTION_QUEUE, {
    connection: bullmqConnection(config.REDIS_URL),
    prefix: config.BULLMQ_PREFIX,
  });
  try {
    await queue.upsertJobScheduler(
      retentionJob.name,
      { every: config.OUTBOX_RETENTION_EVERY_MS },
      {
        name: retentionJob.name,
        data: {},
        opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
      },
    );
  } finally {
    await queue.close();
  }
}

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
