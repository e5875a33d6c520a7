import { inheritsAppRole, type Database } from '@listing/db';
import type {
  OutboxDispatcher,
  OutboxRepository,
  OutboxWorkerRuntime,
  QueueProducer,
  RedisTarget,
} from '@listing/outbox';
import type { Logger } from 'pino';
import {
  createRoleRegistry,
  instrumentDispatcher,
  instrumentWorkerRuntime,
} from './metrics/outbox-process.metrics';
import { registerOutboxBacklogMetrics } from './metrics/outbox-backlog.metrics';
import { startOpsServer, type OpsServer } from './ops-http.server';

export interface RoleOpsOptions {
  role: 'dispatcher' | 'worker';
  db: Database;
  redis: RedisTarget;
  logger: Logger;
  dispatcher?: OutboxDispatcher;
  /** The dispatcher's backlog gauges read the outbox through it. */
  outbox?: OutboxRepository;
  producer?: QueueProducer;
  runtime?: OutboxWorkerRuntime;
  env?: NodeJS.ProcessEnv;
}

/**
 * Everything the dispatcher and worker processes need for operations, in one call from their
 * entry points: metrics instrumentation (before the engine starts) and the OPS_PORT listener
 * with /metrics and /health/{live,ready}. Call `draining()` first and `close()` last on SIGTERM.
 */
export async function startRoleOps(options: RoleOpsOptions): Promise<OpsServer> {
  // sql/017 took the account tables away from the outbox agent; a setup that never dropped its
  // old membership in app_user leaves them readable. Say so; keep running.
  void inheritsAppRole(options.db).then(
    (inherits) => {
      if (inherits)
        options.logger.warn(
          'this role still inherits app_user (account tables included): run `pnpm db:setup` to drop the membership',
        );
    },
    () => undefined,
  );
  const registry = createRoleRegistry(options.role);
  if (options.dispatcher && options.producer) {
    instrumentDispatcher(registry, options.dispatcher, options.producer);
    if (options.outbox) registerOutboxBacklogMetrics(registry, options.outbox);
  }
  if (options.runtime) instrumentWorkerRuntime(registry, options.runtime, options.logger);
  return startOpsServer({
    role: options.role,
    registry,
    db: options.db,
    redis: options.redis,
    logger: options.logger,
    env: options.env,
  });
}
