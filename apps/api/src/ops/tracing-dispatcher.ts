import { startRoleTracing } from './tracing';

/**
 * The dispatcher role's tracing, started as dispatcher.ts's first import: the instrumentations must be in
 * place before pg, ioredis, http or fastify load. Off (nothing loaded) without an OTLP endpoint.
 */
export const tracing = startRoleTracing('dispatcher');
