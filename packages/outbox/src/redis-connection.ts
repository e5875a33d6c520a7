import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { redisOptionsFromUrl } from './redis-options';

/** A connection to one Redis server (or a failover address) or to a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * Where Redis is. `cluster`: `url` names a seed node of a Redis Cluster (its credentials and TLS
 * apply to every node); the client discovers the other nodes and follows slot moves.
 */
export interface RedisTarget {
  readonly url: string;
  readonly cluster?: boolean;
}

/**
 * Every Redis connection of the project is made here, so that one setting (REDIS_CLUSTER) turns
 * them all into cluster clients. `extra` are per-connection ioredis options; in cluster mode the
 * ones that exist at cluster level (offline queue, lazy connect, reconnect strategy) are moved
 * there, the rest apply to each node's connection.
 */
export function connectRedis(target: RedisTarget, extra: RedisOptions = {}): RedisClient {
  const options = redisOptionsFromUrl(target.url, extra);
  if (!target.cluster) return new Redis(options);
  const { host, port, db, retryStrategy, enableOfflineQueue, lazyConnect, ...node } = options;
  if (db) throw new Error(`a Redis Cluster has only database 0; REDIS_URL names database ${db}`);
  const cluster: ClusterOptions = {
    redisOptions: node,
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    clusterRetryStrategy: retryStrategy
      ? (times) => retryStrategy(times)
      : (times) => Math.min(100 * times, 2000),
    // During a failover a node's connection drops and the cluster answers CLUSTERDOWN for a
    // moment: retry instead of failing (MOVED is followed at once anyway).
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
  };
  return new Cluster([{ host: host!, port: port! }], cluster);
}

/**
 * A producer connection (dispatcher, CLI): commands fail fast while Redis is away instead of
 * queueing in memory, so the dispatcher notices and pauses.
 */
export function connectProducerRedis(target: RedisTarget): RedisClient {
  return connectRedis(target, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: 5000,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  });
}

/** A connection BullMQ may block on (workers): no per-request retry limit. */
export function connectBullmqRedis(target: RedisTarget): RedisClient {
  return connectRedis(target, { maxRetriesPerRequest: null });
}

/** Every master of a cluster, or the one server: for what walks the keyspace (SCAN). */
export function keyspaceNodes(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis];
}

/**
 * Redis's clock in ms: the same for every process, where each host's own clock may differ. Read
 * on the server holding `routeKey` (a script declaring it), so that on a cluster every process
 * reads the same node's clock: the one holding the outbox's keys.
 */
export async function redisClockMs(redis: RedisClient, routeKey: string): Promise<number> {
  const [seconds, micros] = (await redis.eval("return redis.call('TIME')", 1, routeKey)) as [string, string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
