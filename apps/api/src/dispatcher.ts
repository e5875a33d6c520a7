import { Database } from '@listing/db';
import {
  nudgeChannel,
  NudgeSubscriber,
  OutboxDispatcher,
  OutboxFaults,
  producerRedisOptions,
  QueueProducer,
  redisOptionsFromUrl,
} from '@listing/outbox';
import { Redis } from 'ioredis';
import { loadOutboxConfig, outboxDatabaseUrl } from './config/outbox-config';
import { onShutdown } from './outbox/graceful-shutdown';
import { createLogger, logLevelFromEnv, outboxLogger } from './ops/logger.factory';
import { startRoleOps } from './ops/role-ops';

/**
 * Outbox dispatcher process: moves committed outbox events into BullMQ. Run as many as you like;
 * SKIP LOCKED leases keep them from enqueueing an event twice while a lease is valid.
 */
async function main() {
  const config = loadOutboxConfig();
  const faults = OutboxFaults.fromEnv();
  const logger = outboxLogger(createLogger('dispatcher', logLevelFromEnv()));
  const db = new Database({
    connectionString: outboxDatabaseUrl(config),
    max: config.DATABASE_POOL_SIZE,
    applicationName: 'dispatcher',
  });
  const producerRedis = new Redis(producerRedisOptions(config.REDIS_URL));
  producerRedis.on('error', () => undefined); // the dispatcher pauses while Redis is away
  const producer = new QueueProducer(producerRedis, config.BULLMQ_PREFIX, {
    completedAgeSec: config.OUTBOX_JOB_COMPLETED_AGE_S,
    failedAgeSec: config.OUTBOX_JOB_FAILED_AGE_S,
    handlerBackoffMs: config.OUTBOX_HANDLER_BACKOFF_MS,
  });
  const dispatcher = new OutboxDispatcher({
    db,
    producer,
    id: config.OUTBOX_DISPATCHER_ID,
    batchSize: config.OUTBOX_BATCH_SIZE,
    concurrency: config.OUTBOX_CONCURRENCY,
    fastLanes: config.OUTBOX_FAST_LANES,
    batchesPerWorkspace: config.OUTBOX_BATCHES_PER_WORKSPACE,
    workspacesPerRound: config.OUTBOX_WORKSPACES_PER_ROUND,
    leaseMs: config.OUTBOX_LEASE_MS,
    pollIntervalMs: config.OUTBOX_POLL_INTERVAL_MS,
    reclaimIntervalMs: config.OUTBOX_RECLAIM_INTERVAL_MS,
    redisRetryMs: config.OUTBOX_REDIS_RETRY_MS,
    lostJobRecovery:
      config.OUTBOX_LOST_JOB_RECOVERY === '1' ? { windowSec: config.OUTBOX_JOB_COMPLETED_AGE_S } : undefined,
    backoff: {
      baseMs: config.OUTBOX_BACKOFF_BASE_MS,
      maxMs: config.OUTBOX_BACKOFF_MAX_MS,
      jitter: config.OUTBOX_BACKOFF_JITTER,
    },
    faults,
    logger,
  });

  let subscriber: Redis | null = null;
  if (config.OUTBOX_NUDGE === 'redis') {
    subscriber = new Redis(
      redisOptionsFromUrl(config.REDIS_URL, { retryStrategy: (n) => Math.min(50 * n, 1000) }),
    );
    subscriber.on('error', () => undefined);
    new NudgeSubscriber(subscriber, nudgeChannel(config.BULLMQ_PREFIX), logger).start((workspaceIds) =>
      dispatcher.wake(workspaceIds),
    );
  }

  // Metrics (OPS_PORT: /metrics, /health/live, /health/ready); see apps/api/src/ops.
  const ops = await startRoleOps({
    role: 'dispatcher',
    db,
    redisUrl: config.REDIS_URL,
    logger: logger.pino,
    dispatcher,
    producer,
  });
  onShutdown(
    async () => {
      ops.draining();
      await dispatcher.stop();
      await producer.close();
      producerRedis.disconnect();
      subscriber?.disconnect();
      await db.close();
      await ops.close();
      logger.info('dispatcher exited cleanly', { dispatcher: dispatcher.id, ...dispatcher.stats });
    },
    logger,
    config.OUTBOX_STOP_TIMEOUT_MS,
  );
  // Give the producer connection a moment to come up, so a normal start does not log a pause.
  if (producerRedis.status !== 'ready') {
    await Promise.race([
      new Promise((resolve) => producerRedis.once('ready', resolve)),
      new Promise((resolve) => setTimeout(resolve, 2000).unref()),
    ]);
  }
  dispatcher.start();
  logger.info('dispatcher ready', {
    dispatcher: dispatcher.id,
    nudge: config.OUTBOX_NUDGE,
    faults: faults.active,
  });
}

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
