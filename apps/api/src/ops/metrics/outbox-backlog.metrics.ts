import type { OutboxQueueStats, OutboxRepository } from '@listing/outbox';
import { Gauge, type Registry } from 'prom-client';

/**
 * Outbox backlog per queue, read on scrape through `outbox_stats()` (sql/003: a narrow SECURITY
 * DEFINER aggregate; the application role cannot see across workspaces otherwise). prom-client
 * collects the gauges of one scrape concurrently, so they share the query in flight. A failed query empties the gauges instead of failing the whole scrape, and
 * `listing_outbox_stats_up` says so.
 */
export function registerOutboxBacklogMetrics(
  registry: Registry,
  repository: Pick<OutboxRepository, 'stats'>,
): void {
  let inFlight: Promise<OutboxQueueStats[] | null> | null = null;
  const load = () =>
    (inFlight ??= repository
      .stats()
      .catch(() => null)
      .finally(() => {
        // Settled: the next scrape queries again (the gauges of this one already share it).
        setImmediate(() => (inFlight = null));
      }));
  const gauge = (name: string, help: string, value: (s: OutboxQueueStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['queue'],
      registers: [registry],
      async collect() {
        const stats = await load();
        this.reset();
        for (const s of stats ?? []) this.set({ queue: s.queue }, value(s));
      },
    });
  gauge('listing_outbox_pending_events', 'Outbox events waiting to be dispatched', (s) => s.pending);
  gauge(
    'listing_outbox_oldest_pending_age_seconds',
    'Age of the oldest pending outbox event (0 when none)',
    (s) => (s.oldestPendingAgeMs ?? 0) / 1000,
  );
  gauge(
    'listing_outbox_dispatching_events',
    'Outbox events leased by a dispatcher now',
    (s) => s.dispatching,
  );
  gauge(
    'listing_outbox_dead_letter_events',
    'Outbox events in dead_letter (node apps/api/dist/cli.js dead-letters list)',
    (s) => s.deadLetter,
  );
  new Gauge({
    name: 'listing_outbox_stats_up',
    help: '1 when the last outbox statistics query succeeded',
    registers: [registry],
    async collect() {
      this.set((await load()) === null ? 0 : 1);
    },
  });
}
