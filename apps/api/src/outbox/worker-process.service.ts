import { resolve } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  connectBullmqRedis,
  OutboxFaults,
  OutboxWorkerRuntime,
  RETENTION_QUEUE,
  retentionJob,
  type OutboxLogger,
} from '@listing/outbox';
import { Queue } from 'bullmq';
import type { Logger } from 'pino';
import { OUTBOX_CONFIG, type OutboxConfig } from '../config/outbox-config';
import { redisTarget } from '../config/redis-config';
import { startRoleOps } from '../ops/role-ops';
import type { OpsServer } from '../ops/ops-http.server';
import { JobDiscovery } from './job-discovery';
import { OUTBOX_LOGGER } from './outbox-roles.tokens';
import { assertTopology, loadRoles, parseQueueList } from './worker-topology';

/** apps/api/roles.json, from src/outbox or dist/outbox alike. */
const DEFAULT_ROLES_FILE = resolve(__dirname, '..', '..', 'roles.json');

/**
 * The worker role: discovers the declared jobs and their handlers, refuses a topology that would
 * strand a job, then consumes its queues (re-entrant, inbox-guarded handlers) and serves its ops
 * listener (metrics, health).
 */
@Injectable()
export class WorkerProcess {
  private runtime: OutboxWorkerRuntime | null = null;
  private ops: OpsServer | null = null;
  private opsClosing = false;
  private consuming: readonly string[] = [];

  constructor(
    private readonly db: Database,
    private readonly discovery: JobDiscovery,
    @Inject(OUTBOX_CONFIG) private readonly config: OutboxConfig,
    @Inject(OUTBOX_LOGGER) private readonly logger: OutboxLogger & { pino: Logger },
  ) {}

  async start(): Promise<void> {
    const registry = this.discovery.registry();
    const queues = parseQueueList(this.config.OUTBOX_WORKER_QUEUES);
    const roles = loadRoles(this.config.OUTBOX_ROLES_FILE ?? DEFAULT_ROLES_FILE);
    assertTopology(registry.definitions(), roles, queues);
    const runtime = new OutboxWorkerRuntime({
      db: this.db,
      registry,
      redis: redisTarget(this.config),
      prefix: this.config.BULLMQ_PREFIX,
      concurrency: this.config.OUTBOX_WORKER_CONCURRENCY,
      queues,
      failedSweepIntervalMs: this.config.OUTBOX_FAILED_SWEEP_INTERVAL_MS,
      lockDurationMs: this.config.OUTBOX_WORKER_LOCK_MS,
      stalledIntervalMs: this.config.OUTBOX_WORKER_LOCK_MS,
      faults: OutboxFaults.fromEnv(),
      logger: this.logger,
    });
    this.runtime = runtime;
    // Metrics and per-job logs (before start), OPS_PORT listener; see ../ops.
    this.ops = await startRoleOps({
      role: 'worker',
      db: this.db,
      redis: redisTarget(this.config),
      logger: this.logger.pino,
      runtime,
    });
    await runtime.start();
    if (!queues || queues.includes(RETENTION_QUEUE)) await this.scheduleRetention();
    this.consuming = queues ?? registry.queues();
  }

  /**
   * Logs "worker ready". Separate from start(): the process installs its SIGTERM handler in
   * between, so a supervisor that stops the worker the moment it reads the line never meets the
   * signal's default action (killed outright, not stopped).
   */
  announceReady(): void {
    this.logger.info('worker ready', { queues: this.consuming });
  }

  /** Readiness goes 503, active jobs finish, connections close; the DI graph closes after. */
  async stop(): Promise<void> {
    this.ops?.draining();
    await this.runtime?.close();
    this.opsClosing = true;
    await this.ops?.close();
  }

  /** What stop() is waiting on (the stop timeout's message). */
  stopPending(): string | null {
    return this.opsClosing ? 'the ops listener' : (this.runtime?.closePending() ?? null);
  }

  /** One repeatable retention job per deployment (upsert is idempotent across workers). */
  private async scheduleRetention(): Promise<void> {
    const connection = connectBullmqRedis(redisTarget(this.config));
    const queue = new Queue(RETENTION_QUEUE, { connection, prefix: this.config.BULLMQ_PREFIX });
    try {
      await queue.upsertJobScheduler(
        retentionJob.name,
        { every: this.config.OUTBOX_RETENTION_EVERY_MS },
        {
          name: retentionJob.name,
          data: {},
          opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
        },
      );
    } finally {
      await queue.close();
      connection.disconnect();
    }
  }
}
