import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database } from '@listing/db';
import { connectRedis, type RedisTarget } from '@listing/outbox';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { HttpErrorCode } from '../common/domain-errors';
import { PROBLEM_JSON, problemOf } from '../common/problem-details.filter';
import { checkReadiness } from './health-probe';

const opsEnv = z.object({
  /** Unset: no ops listener. 0: an ephemeral port (logged). */
  OPS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  OPS_HOST: z.string().default('127.0.0.1'),
});

export interface OpsServerOptions {
  role: string;
  registry: Registry;
  db: Database;
  redis: RedisTarget;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
}

export interface OpsServer {
  /** The bound port, or null when OPS_PORT is unset. */
  readonly port: number | null;
  /** Readiness answers 503 from now on (called first on SIGTERM). */
  draining(): void;
  close(): Promise<void>;
}

/**
 * The small HTTP listener of the non-HTTP roles (dispatcher, worker): `/metrics`,
 * `/health/live` and `/health/ready` (PostgreSQL and Redis). Its own Redis client (offline queue
 * off) so a probe fails at once while Redis is away instead of queueing behind a reconnect.
 */
export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const parsed = opsEnv.safeParse(options.env ?? process.env);
  if (!parsed.success) throw new Error(`invalid OPS_PORT/OPS_HOST: ${parsed.error.issues[0]?.message}`);
  const { OPS_PORT, OPS_HOST } = parsed.data;
  if (OPS_PORT === undefined) {
    return { port: null, draining: () => undefined, close: async () => undefined };
  }
  const redis = connectRedis(options.redis, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (n) => Math.min(100 * n, 1000),
    connectionName: `${options.role}-health`,
  });
  redis.on('error', () => undefined); // readiness reports it; the log would repeat every retry
  let stopping = false;

  const server: Server = createServer((req, res) => {
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const problem = (code: HttpErrorCode, detail?: string) => {
      const body = problemOf(code, detail);
      send(body.status, PROBLEM_JSON, JSON.stringify(body));
    };
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.setHeader('allow', 'GET');
      return problem('METHOD_NOT_ALLOWED', 'only GET');
    }
    if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => send(200, options.registry.contentType, text),
        () => problem('INTERNAL_ERROR', 'metrics unavailable'),
      );
      return;
    }
    if (path === '/health/live') return send(200, 'application/json', JSON.stringify({ status: 'ok' }));
    if (path === '/health/ready') {
      void checkReadiness(options.db, redis).then((report) => {
        const ok = report.status === 'ok' && !stopping;
        const body = stopping ? { ...report, status: 'stopping' } : report;
        send(ok ? 200 : 503, 'application/json', JSON.stringify(body));
      });
      return;
    }
    problem('ROUTE_NOT_FOUND', 'no such route');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(OPS_PORT, OPS_HOST, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  options.logger.info({ host: OPS_HOST, port }, 'ops listening');
  return {
    port,
    draining: () => {
      stopping = true;
    },
    close: async () => {
      stopping = true;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      redis.disconnect();
    },
  };
}
