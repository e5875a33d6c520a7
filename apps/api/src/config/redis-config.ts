// Type only: the configuration is parsed before tracing starts, and loading @listing/outbox here
// would load pg and ioredis before their instrumentation could patch them.
import type { RedisTarget } from '@listing/outbox';
import { z } from 'zod';

/**
 * Where every role finds Redis, shared by each role's configuration. REDIS_CLUSTER=1: REDIS_URL
 * names one seed node of a Redis Cluster (the others are discovered), and BULLMQ_PREFIX must carry
 * a hash tag (`{listing}`) so that each queue's keys, and the outbox's beside them, share a slot
 * (docs/scaling.md).
 */
export const redisFields = {
  REDIS_URL: z.url().default('redis://127.0.0.1:6379'),
  REDIS_CLUSTER: z
    .enum(['0', '1'])
    .default('0')
    .transform((v) => v === '1'),
  BULLMQ_PREFIX: z.string().min(1).default('bull'),
  /**
   * Least time between two dispatcher nudges one process publishes (ms; 0 = one per commit). A
   * nudge after a quiet spell goes at once; under load the commits of a gap share one PUBLISH
   * (bench/dispatcher/RESULTS.md: CPU per event against latency).
   */
  OUTBOX_NUDGE_GAP_MS: z.coerce.number().int().min(0).max(1000).default(2),
};

export function refuseClusterWithoutHashTag(
  env: { REDIS_CLUSTER: boolean; BULLMQ_PREFIX: string; REDIS_URL: string },
  ctx: z.RefinementCtx,
): void {
  if (!env.REDIS_CLUSTER) return;
  const problem = clusterPrefixProblem(env.BULLMQ_PREFIX);
  if (problem) ctx.addIssue({ code: 'custom', path: ['BULLMQ_PREFIX'], message: problem });
  if (/^\/\d*[1-9]/.test(new URL(env.REDIS_URL).pathname)) {
    ctx.addIssue({ code: 'custom', path: ['REDIS_URL'], message: 'a Redis Cluster has only database 0' });
  }
}

export function redisTarget(env: { REDIS_URL: string; REDIS_CLUSTER: boolean }): RedisTarget {
  return { url: env.REDIS_URL, cluster: env.REDIS_CLUSTER };
}

/**
 * Why `prefix` cannot serve a Redis Cluster, or null when it can. BullMQ's scripts touch several
 * keys of a queue at once, and the outbox's own keys sit beside them: every key must hash to one
 * slot, so the prefix must carry a hash tag (`{…}`, non-empty, closed within the prefix).
 */
function clusterPrefixProblem(prefix: string): string | null {
  const open = prefix.indexOf('{');
  const close = open < 0 ? -1 : prefix.indexOf('}', open + 1);
  if (open >= 0 && close > open + 1) return null;
  return `BULLMQ_PREFIX "${prefix}" has no hash tag: on a Redis Cluster every key of a queue must share one slot; use a prefix like "{${prefix.replace(/[{}]/g, '') || 'bull'}}"`;
}
