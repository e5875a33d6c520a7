import type { ConnectionOptions } from 'bullmq';
import type { Redis, RedisOptions } from 'ioredis';

/** ioredis options from a redis:// URL (host, port, credentials, db). */
export function redisOptionsFromUrl(url: string, extra: RedisOptions = {}): RedisOptions {
  const u = new URL(url);
  const db = u.pathname.replace(/^\//, '');
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db: db ? Number(db) : undefined,
    tls: u.protocol === 'rediss:' ? {} : undefined,
    // After a failover the old primary answers READONLY: reconnect (DNS may name the new one).
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
    ...extra,
  };
}

/**
 * Options for a producer connection (dispatcher, API nudges): commands fail fast while Redis is
 * away instead of queueing in memory, so the dispatcher notices and pauses.
 */
export function producerRedisOptions(url: string): RedisOptions {
  return redisOptionsFromUrl(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: 5000,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  });
}

/** The same options typed for BullMQ (its RedisOptions type differs from ioredis' in details). */
export function bullmqConnection(url: string): ConnectionOptions {
  return redisOptionsFromUrl(url) as ConnectionOptions;
}

/** Redis's clock in ms: the same for every process, where each host's own clock may differ. */
export async function redisClockMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
