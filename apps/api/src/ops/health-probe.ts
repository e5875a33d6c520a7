import type { Database } from '@listing/db';
import { sql } from '@listing/db';
import type { RedisClient } from '@listing/outbox';

/** Readiness answers within this bound even when a dependency hangs (a black-holed host). */
export const PROBE_TIMEOUT_MS = 1000;

export async function probe(check: () => Promise<unknown>, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

export interface ReadinessReport {
  status: 'ok' | 'unavailable';
  checks: { postgres: boolean; redis: boolean };
}

/** PostgreSQL answers a query and Redis answers PING, both within the bound, in parallel. */
export async function checkReadiness(db: Database, redis: RedisClient): Promise<ReadinessReport> {
  const [postgres, redisOk] = await Promise.all([
    probe(() => db.executor.execute(sql`select 1`)),
    probe(async () => {
      if (redis.status !== 'ready') throw new Error('redis not connected');
      if ((await redis.ping()) !== 'PONG') throw new Error('unexpected PING reply');
    }),
  ]);
  return { status: postgres && redisOk ? 'ok' : 'unavailable', checks: { postgres, redis: redisOk } };
}
