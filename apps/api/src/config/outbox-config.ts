import { AGENT_ROLE, withCredentials } from '@listing/db';
import { z } from 'zod';
import { preparedStatementsSetting } from './database-config';
import { redisFields, refuseClusterWithoutHashTag } from './redis-config';
import { ConfigError } from './app-config';

const int = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);
const flag = z.enum(['0', '1']).default('0');

/**
 * Configuration of the outbox processes (dispatcher, worker, CLI), parsed once at boot. A bad
 * environment fails with the list of every offending variable.
 */
const schema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    DATABASE_URL: z.url().default('postgres://app_user:app_user@127.0.0.1:5432/listing'),
    /**
     * What the dispatcher, the worker and the CLI connect with: the outbox_agent role (sql/012).
     * Default: DATABASE_URL's server and database as outbox_agent with the development password;
     * production must set it.
     */
    OUTBOX_DATABASE_URL: z.url().optional(),
    DATABASE_POOL_SIZE: int(1, 200, 10),
    DATABASE_PREPARED_STATEMENTS: preparedStatementsSetting,
    ...redisFields,

    OUTBOX_DISPATCHER_ID: z.string().min(1).max(200).optional(),
    OUTBOX_BATCH_SIZE: int(1, 10_000, 500),
    OUTBOX_CONCURRENCY: int(1, 64, 4),
    OUTBOX_FAST_LANES: int(1, 64, 2),
    OUTBOX_BATCHES_PER_WORKSPACE: int(1, 1000, 4),
    OUTBOX_WORKSPACES_PER_ROUND: int(1, 10_000, 100),
    OUTBOX_LEASE_MS: int(100, 3_600_000, 30_000),
    OUTBOX_POLL_INTERVAL_MS: int(1, 600_000, 500),
    OUTBOX_RECLAIM_INTERVAL_MS: z.coerce.number().int().min(0).max(600_000).optional(),
    OUTBOX_REDIS_RETRY_MS: int(10, 60_000, 500),
    OUTBOX_BACKOFF_BASE_MS: int(1, 3_600_000, 1000),
    OUTBOX_BACKOFF_MAX_MS: int(1, 86_400_000, 300_000),
    OUTBOX_BACKOFF_JITTER: z.coerce.number().min(0).max(1).default(0.5),
    /** Post-commit wake-up: Redis PUBLISH (default) or none (polling only). */
    OUTBOX_NUDGE: z.enum(['redis', 'off']).default('redis'),

    OUTBOX_WORKER_CONCURRENCY: int(1, 1000, 16),
    /**
     * BullMQ's job lock (renewed while the job runs) and stall-check interval: a job whose worker
     * died is delivered again about this long after (BullMQ's default, 30 s).
     */
    OUTBOX_WORKER_LOCK_MS: int(1000, 600_000, 30_000),
    /** How often a worker looks for failed jobs whose event never got its dead letter; 0 = never. */
    OUTBOX_FAILED_SWEEP_INTERVAL_MS: int(0, 86_400_000, 60_000),
    /**
     * How long a dispatcher or worker may take to stop on SIGTERM (finish its in-flight work,
     * release its leases) before it exits 1 anyway. Keep it below the supervisor's own grace.
     */
    OUTBOX_STOP_TIMEOUT_MS: int(100, 3_600_000, 25_000),
    /** Comma-separated subset of queues this worker consumes (default: all declared). */
    OUTBOX_WORKER_QUEUES: z.string().optional(),
    /**
     * The deployment's process roles (default apps/api/roles.json): the worker refuses to start
     * when a declared job's queue is served by no worker role in it.
     */
    OUTBOX_ROLES_FILE: z.string().min(1).optional(),
    OUTBOX_JOB_COMPLETED_AGE_S: int(1, 30 * 86_400, 86_400),
    OUTBOX_JOB_FAILED_AGE_S: int(1, 90 * 86_400, 7 * 86_400),
    OUTBOX_HANDLER_BACKOFF_MS: int(0, 3_600_000, 1000),
    /**
     * After a Redis restart, dispatched events whose BullMQ job is gone are delivered again
     * (events dispatched within OUTBOX_JOB_COMPLETED_AGE_S). 1 = on (default).
     */
    OUTBOX_LOST_JOB_RECOVERY: z.enum(['0', '1']).default('1'),

    OUTBOX_RETENTION_EVERY_MS: int(1000, 7 * 86_400_000, 3_600_000),
    OUTBOX_RETENTION_DISPATCHED_MS: int(0, 365 * 86_400_000, 7 * 86_400_000),
    OUTBOX_RETENTION_INBOX_MS: int(0, 365 * 86_400_000, 30 * 86_400_000),
    OUTBOX_RETENTION_BATCH: int(1, 10_000, 1000),
    OUTBOX_RETENTION_MAX_BATCHES: int(1, 100_000, 100),

    // Test-only switches (refused outside NODE_ENV=test).
    OUTBOX_FAULTS_ENABLED: flag,
    OUTBOX_FAULT: z.string().optional(),
    OUTBOX_TRACE_FILE: z.string().optional(),
    OUTBOX_TEST_JOBS: flag,
    OUTBOX_TEST_EFFECT_MODE: z.enum(['ok', 'fail']).default('ok'),
  })
  .superRefine((c, ctx) => {
    refuseClusterWithoutHashTag(c, ctx);
    if (c.OUTBOX_JOB_COMPLETED_AGE_S * 1000 < c.OUTBOX_LEASE_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['OUTBOX_JOB_COMPLETED_AGE_S'],
        message: 'must keep completed jobs at least as long as OUTBOX_LEASE_MS',
      });
    }
    // A dispatched event must outlive its job: lost-job recovery re-delivers from these rows, a
    // last failed attempt dead-letters its row, and the inbox recognises a redelivery by its row.
    for (const key of ['OUTBOX_RETENTION_DISPATCHED_MS', 'OUTBOX_RETENTION_INBOX_MS'] as const) {
      if (c[key] < c.OUTBOX_JOB_COMPLETED_AGE_S * 1000) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'must be >= OUTBOX_JOB_COMPLETED_AGE_S (in ms): a job may still run or be re-delivered',
        });
      }
    }
    // The failed-job sweep dead-letters events whose job failed without one: it must find the
    // job still there when it comes round (twice the interval: one sweep may be missed).
    if (
      c.OUTBOX_FAILED_SWEEP_INTERVAL_MS > 0 &&
      c.OUTBOX_JOB_FAILED_AGE_S * 1000 < 2 * c.OUTBOX_FAILED_SWEEP_INTERVAL_MS
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['OUTBOX_JOB_FAILED_AGE_S'],
        message: 'must keep failed jobs at least twice OUTBOX_FAILED_SWEEP_INTERVAL_MS (in s)',
      });
    }
    if (c.OUTBOX_BACKOFF_MAX_MS < c.OUTBOX_BACKOFF_BASE_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['OUTBOX_BACKOFF_MAX_MS'],
        message: 'must be >= OUTBOX_BACKOFF_BASE_MS',
      });
    }
    if (c.NODE_ENV === 'production' && !c.OUTBOX_DATABASE_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['OUTBOX_DATABASE_URL'],
        message: `required in production (the ${AGENT_ROLE} role; no development password)`,
      });
    }
    if (c.NODE_ENV !== 'test') {
      for (const key of ['OUTBOX_FAULTS_ENABLED', 'OUTBOX_TEST_JOBS'] as const) {
        if (c[key] === '1')
          ctx.addIssue({ code: 'custom', path: [key], message: 'only allowed with NODE_ENV=test' });
      }
      for (const key of ['OUTBOX_FAULT', 'OUTBOX_TRACE_FILE'] as const) {
        if (c[key]) ctx.addIssue({ code: 'custom', path: [key], message: 'only allowed with NODE_ENV=test' });
      }
    }
  });

export type OutboxConfig = z.infer<typeof schema>;

/** The outbox processes' database URL (see OUTBOX_DATABASE_URL). */
export function outboxDatabaseUrl(config: OutboxConfig): string {
  return config.OUTBOX_DATABASE_URL ?? withCredentials(config.DATABASE_URL, AGENT_ROLE, AGENT_ROLE);
}

export function loadOutboxConfig(env: NodeJS.ProcessEnv = process.env): OutboxConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return parsed.data;
}

export const OUTBOX_CONFIG = Symbol('OUTBOX_CONFIG');
