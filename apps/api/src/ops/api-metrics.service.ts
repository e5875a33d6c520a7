import type { OutboxRepository } from '@listing/outbox';
import type { IdempotencyObserver } from '@listing/idempotency';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { registerOutboxBacklogMetrics } from './metrics/outbox-backlog.metrics';

/** Seconds; covers a cached replay (sub-millisecond) up to a request stuck behind a lock. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The API process's Prometheus registry. One registry per app instance (not prom-client's global
 * one) so that tests running several apps in one process do not share counters.
 */
export class ApiMetrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly idempotencyOutcomes: Counter<'outcome'>;
  readonly idempotencyWait: Histogram<'outcome'>;

  constructor(outbox: Pick<OutboxRepository, 'stats'>) {
    this.registry.setDefaultLabels({ role: 'api' });
    collectDefaultMetrics({ register: this.registry, prefix: 'listing_process_' });
    this.httpRequests = new Counter({
      name: 'listing_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.httpDuration = new Histogram({
      name: 'listing_http_request_duration_seconds',
      help: 'HTTP request duration from arrival to response, by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
    this.idempotencyOutcomes = new Counter({
      name: 'listing_idempotency_requests_total',
      help: 'Requests with an Idempotency-Key by outcome: miss, hit, key_reused, scope_conflict, in_progress',
      labelNames: ['outcome'],
      registers: [this.registry],
    });
    this.idempotencyWait = new Histogram({
      name: 'listing_idempotency_wait_seconds',
      help: 'Time from reservation attempt to outcome (miss: the whole first execution; in_progress: the bounded wait)',
      labelNames: ['outcome'],
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
    // Zero-initialise the outcomes so dashboards and rate() see every series from the start.
    for (const outcome of ['miss', 'hit', 'key_reused', 'scope_conflict', 'in_progress'])
      this.idempotencyOutcomes.inc({ outcome }, 0);
    registerOutboxBacklogMetrics(this.registry, outbox);
  }

  /** IdempotencyService's observer (4th constructor argument). */
  readonly observeIdempotency: IdempotencyObserver = (outcome, waitMs) => {
    this.idempotencyOutcomes.inc({ outcome });
    if (waitMs !== undefined) this.idempotencyWait.observe({ outcome }, waitMs / 1000);
  };

  observeHttp(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.httpRequests.inc(labels);
    this.httpDuration.observe(labels, seconds);
  }
}
