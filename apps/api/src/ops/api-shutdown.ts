import type { INestApplication } from '@nestjs/common';
import type { Logger } from 'pino';
import { ApiLifecycle } from './ops.module';

/**
 * SIGTERM/SIGINT for the API: readiness turns 503 and every answer carries `Connection: close`
 * for `graceMs` (the load balancer stops routing here, keep-alive clients move away), then the
 * listener closes, in-flight requests finish, and only then are the pools closed (Nest's
 * shutdown hooks), then `afterClose` (the tracing flush). A second signal during the drain is
 * ignored; the supervisor can SIGKILL.
 */
export function installApiShutdown(
  app: INestApplication,
  logger: Logger,
  graceMs: number,
  afterClose: () => Promise<void> = async () => undefined,
): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    app.get(ApiLifecycle).draining = true;
    logger.info({ signal, graceMs }, 'draining: readiness is 503, connections close after each answer');
    setTimeout(() => {
      logger.info('closing the listener; in-flight requests finish first');
      app.get(ApiLifecycle).closing = true;
      app
        .close()
        .then(afterClose) // e.g. export the spans still buffered
        .then(
          () => {
            logger.info('api stopped cleanly');
            process.exit(0);
          },
          (error: unknown) => {
            logger.error({ error: (error as Error).message }, 'api stop failed');
            process.exit(1);
          },
        );
    }, graceMs);
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
