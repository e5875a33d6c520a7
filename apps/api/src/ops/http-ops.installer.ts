import { randomUUID } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ErrorCatalogue } from '../common/error-catalogue';
import { PROBLEM_JSON, problemOf } from '../common/problem-details.filter';
import type { AppConfig } from '../config/app-config';
import { redisTarget } from '../config/redis-config';
import type { ApiOpsConfig } from './ops-config';
import { AuthGuard } from '../modules/auth/auth.guard';
import { RateLimitGuard } from '../modules/auth/rate-limit.guard';
import { adminAuthorized, sendUnauthenticated } from './admin/admin-auth';
import { mountBullBoard } from './admin/bull-board.plugin';
import { ApiMetrics } from './api-metrics.service';
import { buildOpenApiDocument } from './openapi/openapi.generator';
import { registerSwaggerUi } from './openapi/swagger-ui.routes';
import { ApiLifecycle } from './ops.module';

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/** A caller's X-Request-Id is kept when it is a plain token (it ends up in logs); else a UUID. */
export function requestId(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID_RE.test(header) ? header : randomUUID();
}

interface AuthenticatedRequest {
  auth?: { userId?: string; workspaceId?: string };
}

/**
 * Operability on the API's Fastify instance: request id echo, one JSON log line per request
 * (request id, route, status, duration, workspace and user; never headers or bodies), HTTP
 * metrics, `Connection: close` while draining, `/metrics`, `/docs` and `/admin/queues`.
 * Must run before `app.init()`: Fastify binds hooks to routes when they are registered.
 * `errors` and `failures` are the application's merged catalogues (src/error-codes.ts,
 * src/failure-codes.ts), which /docs lists.
 */
export async function installHttpOps(
  app: NestFastifyApplication,
  config: AppConfig,
  ops: ApiOpsConfig,
  logger: Logger,
  errors: ErrorCatalogue,
  failures: Readonly<Record<string, string>>,
): Promise<void> {
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  const metrics = app.get(ApiMetrics);
  const lifecycle = app.get(ApiLifecycle);

  fastify.addHook('onRequest', async (_request, reply) => {
    // A request on a kept-alive connection after the listener began to close (Fastify's own
    // 503 for it is plain JSON; return503OnClosing is off in app.factory.ts): retry elsewhere.
    if (lifecycle.closing) {
      const problem = problemOf('SERVICE_UNAVAILABLE', 'this instance is shutting down: retry the request');
      return reply
        .code(503)
        .header('retry-after', '1')
        .header('connection', 'close')
        .type(PROBLEM_JSON)
        .send(JSON.stringify(problem));
    }
  });
  fastify.addHook('onSend', async (request, reply, payload) => {
    // Here, not at onRequest: every answer passes onSend, also one that an earlier onRequest hook
    // (the upload's authentication) refused, which skips the onRequest hooks after it.
    void reply.header('x-request-id', request.id);
    // While draining, every answer closes its connection so keep-alive clients reconnect
    // (to another instance) instead of reusing a socket that is about to be closed.
    if (lifecycle.draining) void reply.header('connection', 'close');
    return payload;
  });
  fastify.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.observeHttp(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    const auth = (request as unknown as AuthenticatedRequest).auth;
    const fields = {
      method: request.method,
      route,
      path: request.url.split('?')[0],
      status: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 10) / 10,
      ...(auth?.workspaceId ? { workspaceId: auth.workspaceId } : {}),
      ...(auth?.userId ? { userId: auth.userId } : {}),
    };
    if (reply.statusCode >= 500) request.log.error(fields, 'request failed');
    else request.log.info(fields, 'request completed');
  });

  const metricsToken = ops.METRICS_TOKEN;
  if (!metricsToken && config.NODE_ENV === 'production') {
    logger.warn('METRICS_TOKEN is not set: /metrics answers anyone who reaches the API port');
  }
  fastify.get('/metrics', async (request, reply) => {
    // Every scrape also counts the outbox backlog in PostgreSQL: not for anyone on the internet.
    if (metricsToken && !adminAuthorized(request.headers.authorization, metricsToken)) {
      return sendUnauthenticated(reply, 'listing metrics', 'metrics credentials required');
    }
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).header('cache-control', 'no-store').send(text);
  });

  let document: object | null = null;
  registerSwaggerUi(
    fastify,
    () =>
      (document ??= buildOpenApiDocument(app, {
        title: 'Listing API',
        version: '1',
        authGuards: [AuthGuard],
        rateLimitGuards: [RateLimitGuard],
        errors,
        failures,
      })),
  );

  const closeBoard = await mountBullBoard(fastify, {
    redis: redisTarget(config),
    prefix: config.BULLMQ_PREFIX,
    adminToken: ops.ADMIN_TOKEN,
    logger,
  });
  if (closeBoard) fastify.addHook('onClose', async () => closeBoard());
}
