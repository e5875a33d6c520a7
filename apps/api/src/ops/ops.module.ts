import { Global, Module } from '@nestjs/common';
import { Database } from '@listing/db';
import { OutboxRepository } from '@listing/outbox';
import { ApiMetrics } from './api-metrics.service';

/** Process lifecycle seen by readiness: draining starts on SIGTERM, before the listener closes. */
export class ApiLifecycle {
  draining = false;
  /** The listener is closing (after the grace period): new requests get a problem+json 503. */
  closing = false;
}

/** Metrics and lifecycle of the API process, for the health controller and the idempotency wiring. */
@Global()
@Module({
  providers: [
    {
      provide: ApiMetrics,
      inject: [Database],
      useFactory: (db: Database) => new ApiMetrics(new OutboxRepository(db)),
    },
    ApiLifecycle,
  ],
  exports: [ApiMetrics, ApiLifecycle],
})
export class OpsModule {}
