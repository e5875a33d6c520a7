import type { RedisOptions } from 'ioredis';

/**
 * ioredis options from a redis:// URL (host, port, credentials, db). Not exported from the
 * package: every client is made by connectRedis, which also knows a cluster from a server.
 */
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
