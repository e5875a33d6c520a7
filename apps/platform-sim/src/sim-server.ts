import Fastify, { type FastifyError, type FastifyInstance, LogController } from 'fastify';
import { registerAdminRoutes } from './admin/admin.routes';
import { registerAiVendorRoutes } from './ai-vendor/ai-vendor.routes';
import type { SimConfig } from './config/sim-config';
import { registerFaultHooks } from './faults/fault.hooks';
import { SimError } from './http/sim-errors';
import { registerMarketplaceRoutes } from './marketplace/marketplace.routes';
import { registerMediaRoutes } from './media/media.routes';
import { SimState } from './state/sim-state';

export type SimServerConfig = Pick<SimConfig, 'LOG_LEVEL'> &
  Partial<Pick<SimConfig, 'SIM_ADMIN_TOKEN' | 'SIM_PUBLIC_URL'>>;

const GENERIC_CLIENT_ERRORS: Record<number, string> = {
  400: 'the request body is not valid JSON',
  413: 'the request body is too large',
  415: 'unsupported content type',
};

/**
 * Builds the simulator app (not listening). It owns `state` (in memory by default): closing the
 * app closes the state's file, if it has one.
 */
export function buildSimServer(config: SimServerConfig, state = new SimState()): FastifyInstance {
  const app = Fastify({
    logger: { level: config.LOG_LEVEL, redact: ['req.headers.authorization'] },
    // Per-request lines would drown a chaos soak; faults and errors are logged on their own.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 1024 * 1024,
  });

  // Errors never carry request values: V8's JSON.parse messages quote the body, which may hold a secret.
  app.setErrorHandler((error: FastifyError | SimError, request, reply) => {
    if (error instanceof SimError) {
      return reply.code(error.status).send({ error: error.code, message: error.message, ...error.details });
    }
    const status = error.statusCode ?? 500;
    if (status < 500) {
      const code = error.code?.startsWith('FST_ERR_CTP') ? 'INVALID_BODY' : 'BAD_REQUEST';
      return reply
        .code(status)
        .send({ error: code, message: GENERIC_CLIENT_ERRORS[status] ?? 'bad request' });
    }
    request.log.error({ code: error.code, name: error.name }, 'request failed');
    return reply.code(500).send({ error: 'INTERNAL', message: 'internal error' });
  });

  app.setNotFoundHandler((_request, reply) =>
    reply.code(404).send({ error: 'NOT_FOUND', message: 'no such route' }),
  );

  registerFaultHooks(app, state);
  app.get('/health', async () => ({ status: 'ok' }));
  registerMarketplaceRoutes(app, state);
  registerMediaRoutes(app, state);
  registerAiVendorRoutes(app, state, { publicUrl: config.SIM_PUBLIC_URL });
  registerAdminRoutes(app, state, { adminToken: config.SIM_ADMIN_TOKEN });
  if (state.stateFile !== undefined) {
    // Counters change all over the request path; the state file gets them once each response is out.
    app.addHook('onResponse', async () => state.saveCounters());
  }
  app.addHook('onClose', async () => state.close());
  return app;
}
