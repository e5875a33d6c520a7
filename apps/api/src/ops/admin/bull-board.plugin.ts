import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter as BullBoardFastifyAdapter } from '@bull-board/fastify';
import { Queue } from 'bullmq';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { connectRedis, keyspaceNodes, type RedisClient, type RedisTarget } from '@listing/outbox';
import type { Logger } from 'pino';
import { PROBLEM_JSON, problemOf, statusProblem } from '../../common/problem-details.filter';
import { adminAuthorized, sendUnauthenticated } from './admin-auth';

export const BULL_BOARD_PATH = '/admin/queues';

export interface BullBoardOptions {
  redis: RedisTarget;
  prefix: string;
  /** The admin secret; without one the board is not mounted at all. */
  adminToken: string | undefined;
  logger: Logger;
}

/**
 * Mounts Bull Board at /admin/queues behind admin authentication. Queues are discovered from
 * Redis (`<prefix>:<queue>:meta|id` keys) because the API does not know the workers' registry;
 * the list is refreshed at most every 5 s while someone looks at the board.
 * Returns a closer for the board's Redis connections, or null when no token is configured.
 */
export async function mountBullBoard(
  fastify: FastifyInstance,
  options: BullBoardOptions,
): Promise<(() => Promise<void>) | null> {
  if (!options.adminToken) {
    options.logger.warn('ADMIN_TOKEN is not set: the queue dashboard (/admin/queues) is not mounted');
    return null;
  }
  const token = options.adminToken;
  const connection = connectRedis(options.redis, { maxRetriesPerRequest: null, lazyConnect: true });
  connection.on('error', () => undefined);
  const queues = new Map<string, Queue>();
  const serverAdapter = new BullBoardFastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Listing queues' } },
  });
  let refreshedAt = 0;
  const refresh = async () => {
    if (Date.now() - refreshedAt < 5000) return;
    refreshedAt = Date.now();
    try {
      const names = await discoverQueues(connection, options.prefix);
      let changed = false;
      for (const name of names) {
        if (queues.has(name)) continue;
        queues.set(name, new Queue(name, { connection, prefix: options.prefix }));
        changed = true;
      }
      if (changed) board.replaceQueues([...queues.values()].map((q) => new BullMQAdapter(q)));
    } catch (error) {
      options.logger.warn({ error: (error as Error).message }, 'queue discovery failed');
    }
  };

  await fastify.register(async (scope) => {
    scope.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      if (!adminAuthorized(request.headers.authorization, token)) {
        return sendUnauthenticated(reply, 'listing admin', 'admin credentials required');
      }
      await refresh();
    });
    // Bull Board answers its own errors ({ error, message, details }, with a stack trace in
    // development): rewritten to problem+json that echoes nothing, like every other error.
    scope.addHook('onSend', async (_request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      if (
        reply.statusCode < 400 ||
        String(reply.getHeader('content-type')).startsWith('application/problem+json')
      ) {
        return payload;
      }
      const { code, detail } = statusProblem(reply.statusCode);
      reply.header('content-type', PROBLEM_JSON);
      return JSON.stringify({ ...problemOf(code, detail), status: reply.statusCode });
    });
    await scope.register(serverAdapter.registerPlugin(), { prefix: BULL_BOARD_PATH });
  });
  return async () => {
    await Promise.allSettled([...queues.values()].map((q) => q.close()));
    connection.disconnect();
  };
}

async function discoverQueues(redis: RedisClient, prefix: string): Promise<string[]> {
  if (redis.status === 'wait') await redis.connect();
  const names = new Set<string>();
  const escaped = prefix.replace(/[*?[\]\\]/g, '\\$&');
  // SCAN walks one server: on a cluster, each master (the hash tag puts them all on one anyway).
  for (const node of keyspaceNodes(redis)) {
    for (const suffix of ['meta', 'id']) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${escaped}:*:${suffix}`, 'COUNT', 1000);
        cursor = next;
        for (const key of keys) {
          const name = key.slice(prefix.length + 1, key.length - suffix.length - 1);
          if (name && !name.includes(':')) names.add(name);
        }
      } while (cursor !== '0');
    }
  }
  return [...names].sort();
}
