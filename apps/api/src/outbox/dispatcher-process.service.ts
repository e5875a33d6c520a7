import { Inject, Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  nudgeChannel,
  NudgeSubscriber,
  OutboxDispatcher,
  OutboxFaults,
  OutboxRepository,
  QueueProducer,
  connectProducerRedis,
  connectRedis,
  type OutboxLogger,
  type RedisClient,
} from '@listing/outbox';
import type { Logger } from 'pino';
import { OUTBOX_CONFIG, type OutboxConfig } from '../config/outbox-config';
import { redisTarget } from '../config/redis-config';
import type { OpsServer } from '../ops/ops-http.server';
import { startRoleOps } from '../ops/role-ops';
import { OUTBOX_LOGGER } from './outbox-roles.tokens';

/**
 * The dispatcher role: moves committed outbox events into BullMQ. Run as many as you like; SKIP
 * LOCKED leases keep them from enqueueing an event twice while a lease is valid.
 */
@Injectable()
export class DispatcherProcess {
  private readonly faults = OutboxFaults.fromEnv();
  private readonly producerRedis: RedisClient;
  private readonly producer: QueueProducer;
  private readonly dispatcher: OutboxDispatcher;
  private subscriber: RedisClient | null = null;
  private ops: OpsServer | null = null;

  constructor(
    private readonly db: Database,
    private readonly outbox: OutboxRepository,
    @Inject(OUTBOX_CONFIG) private readonly config: OutboxConfig,
    @Inject(OUTBOX_LOGGER) private readonly logger: OutboxLogger & { pino: Logger },
  ) {
    this.producerRedis = connectProducerRedis(redisTarget(config));
    this.producerRedis.on('error', () => undefined); // the dispatcher pauses while Redis is away
    this.producer = new QueueProducer(this.producerRedis, config.BULLMQ_PREFIX, {
      completedAgeSec: config.OUTBOX_JOB_COMPLETED_AGE_S,
      failedAgeSec: config.OUTBOX_JOB_FAILED_AGE_S,
      handlerBackoffMs: config.OUTBOX_HANDLER_BACKOFF_MS,
    });
    this.dispatcher = new OutboxDispatcher({
      db,
      producer: this.producer,
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
        config.OUTBOX_LOST_JOB_RECOVERY === '1'
          ? { windowSec: config.OUTBOX_JOB_COMPLETED_AGE_S }
          : undefined,
      backoff: {
        baseMs: config.OUTBOX_BACKOFF_BASE_MS,
        maxMs: config.OUTBOX_BACKOFF_MAX_MS,
        jitter: config.OUTBOX_BACKOFF_JITTER,
      },
      faults: this.faults,
      logger,
    });
  }

  async start(): Promise<void> {
    const { config, dispatcher } = this;
    if (config.OUTBOX_NUDGE === 'redis') {
      const subscriber = connectRedis(redisTarget(config), { retryStrategy: (n) => Math.min(50 * n, 1000) });
      subscriber.on('error', () => undefined);
      this.subscriber = subscriber;
      new NudgeSubscriber(subscriber, nudgeChannel(config.BULLMQ_PREFIX), this.logger).start((workspaceIds) =>
        dispatcher.wake(workspaceIds),
      );
    }
    // Metrics (OPS_PORT: /metrics, /health/live, /health/ready); see ../ops.
    this.ops = await startRoleOps({
      role: 'dispatcher',
      db: this.db,
      redis: redisTarget(config),
      logger: this.logger.pino,
      dispatcher,
      producer: this.producer,
      outbox: this.outbox,
    });
    // Give the producer connection a moment to come up, so a normal start does not log a pause.
    if (this.producerRedis.status !== 'ready') {
      await Promise.race([
        new Promise((resolve) => this.producerRedis.once('ready', resolve)),
        new Promise((resolve) => setTimeout(resolve, 2000).unref()),
      ]);
    }
    dispatcher.start();
    this.logger.info('dispatcher ready', {
      dispatcher: dispatcher.id,
      nudge: config.OUTBOX_NUDGE,
      faults: this.faults.active,
    });
  }

  /** Readiness goes 503, the leases are released, connections close; the DI graph closes after. */
  async stop(): Promise<void> {
    this.ops?.draining();
    await this.dispatcher.stop();
    await this.producer.close();
    this.producerRedis.disconnect();
    this.subscriber?.disconnect();
    await this.ops?.close();
    this.logger.info('dispatcher exited cleanly', {
      dispatcher: this.dispatcher.id,
      ...this.dispatcher.stats,
    });
  }
}
