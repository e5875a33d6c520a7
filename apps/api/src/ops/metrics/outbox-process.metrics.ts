import type {
  ClaimedEvent,
  DispatcherStats,
  OutboxDispatcher,
  OutboxWorkerRuntime,
  QueueProducer,
} from '@listing/outbox';
import { redactError } from '@listing/outbox';
import { DelayedError, RateLimitError, UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** A fresh registry for one process role, with the Node.js process metrics. */
export function createRoleRegistry(role: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ role });
  collectDefaultMetrics({ register: registry, prefix: 'listing_process_' });
  return registry;
}

/**
 * Dispatcher metrics. The engine keeps running totals in `dispatcher.stats`; counters read them
 * on scrape (no hook needed in the engine). The producer instance is wrapped so that every
 * enqueue is timed and every event's age at enqueue (created → handed to BullMQ: the dispatch
 * latency users feel) is observed.
 */
export function instrumentDispatcher(
  registry: Registry,
  dispatcher: OutboxDispatcher,
  producer: QueueProducer,
): void {
  const fromStats = (name: string, help: string, key: keyof DispatcherStats) => {
    let seen = 0;
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const now = dispatcher.stats[key];
        if (now > seen) this.inc(now - seen);
        seen = now;
      },
    });
  };
  fromStats(
    'listing_outbox_dispatched_events_total',
    'Events enqueued to BullMQ and marked dispatched',
    'dispatched',
  );
  fromStats('listing_outbox_claimed_events_total', 'Events claimed (leased) by this dispatcher', 'claimed');
  fromStats(
    'listing_outbox_dispatch_failures_total',
    'Enqueue failures counted as an attempt (retried or dead-lettered)',
    'failed',
  );
  fromStats(
    'listing_outbox_dispatcher_dead_lettered_events_total',
    'Events moved to dead_letter by the dispatcher (attempts exhausted)',
    'deadLettered',
  );
  fromStats(
    'listing_outbox_released_leases_total',
    'Leases released without an attempt (Redis down, shutdown)',
    'released',
  );
  fromStats(
    'listing_outbox_reclaimed_leases_total',
    'Expired leases reclaimed from crashed dispatchers',
    'reclaimed',
  );
  fromStats(
    'listing_outbox_dispatcher_pauses_total',
    'Times the dispatcher paused because Redis was unreachable',
    'pauses',
  );
  fromStats(
    'listing_outbox_lost_jobs_requeued_total',
    'Dispatched events delivered again because Redis lost their job (restart, failover)',
    'lostJobsRequeued',
  );

  const enqueue = new Histogram({
    name: 'listing_outbox_enqueue_duration_seconds',
    help: 'Duration of one BullMQ add/addBulk call by queue and result',
    labelNames: ['queue', 'result'],
    buckets: BUCKETS,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'listing_outbox_dispatch_latency_seconds',
    help: 'Event age when handed to BullMQ (commit to enqueue), by queue',
    labelNames: ['queue'],
    buckets: BUCKETS,
    registers: [registry],
  });
  const timed = async (queue: string, events: readonly ClaimedEvent[], call: () => Promise<void>) => {
    const started = process.hrtime.bigint();
    try {
      await call();
    } catch (error) {
      enqueue.observe({ queue, result: 'error' }, seconds(started));
      throw error;
    }
    enqueue.observe({ queue, result: 'ok' }, seconds(started));
    const now = Date.now();
    for (const e of events) latency.observe({ queue }, Math.max(0, now - e.createdAt.getTime()) / 1000);
  };
  const addBulk = producer.addBulk.bind(producer);
  const add = producer.add.bind(producer);
  producer.addBulk = (queue, events) => timed(queue, events, () => addBulk(queue, events));
  producer.add = (queue, event) => timed(queue, [event], () => add(queue, event));
}

/**
 * Worker metrics and per-job logs. Wraps the runtime's public processor on the instance (BullMQ
 * calls it through `this.process(job, token)`), so the engine needs no hook. A job is final when BullMQ
 * will not retry it: then the runtime dead-letters its outbox event.
 */
export function instrumentWorkerRuntime(
  registry: Registry,
  runtime: OutboxWorkerRuntime,
  logger: Logger,
): void {
  const duration = new Histogram({
    name: 'listing_worker_job_duration_seconds',
    help: 'Job processing time by queue, job and outcome (completed, duplicate, failed)',
    labelNames: ['queue', 'job', 'outcome'],
    buckets: BUCKETS,
    registers: [registry],
  });
  const jobs = new Counter({
    name: 'listing_worker_jobs_total',
    help: 'Jobs processed by queue, job and outcome (completed, duplicate: inbox said already applied, failed, postponed: put back without an attempt)',
    labelNames: ['queue', 'job', 'outcome'],
    registers: [registry],
  });
  const failures = new Counter({
    name: 'listing_worker_job_failures_total',
    help: 'Failed job attempts by queue and job; final="true" when BullMQ will not retry (dead letter)',
    labelNames: ['queue', 'job', 'final'],
    registers: [registry],
  });
  const process_ = runtime.process.bind(runtime);
  // The token (the job's lock) must reach the runtime: without it a job cannot be moved back to
  // the delayed set (an unknown job type waiting for a newer worker) and fails instead.
  runtime.process = async (job: Job, token?: string) => {
    const labels = { queue: job.queueName, job: job.name };
    const log = logger.child({
      jobId: job.id,
      eventId: job.id,
      workspaceId: (job.data as { workspaceId?: unknown })?.workspaceId,
      queue: job.queueName,
      job: job.name,
      attempt: job.attemptsMade + 1,
    });
    const started = process.hrtime.bigint();
    log.debug('job started');
    try {
      const outcome = await process_(job, token);
      const kind = outcome.duplicate ? 'duplicate' : 'completed';
      const took = seconds(started);
      duration.observe({ ...labels, outcome: kind }, took);
      jobs.inc({ ...labels, outcome: kind });
      log.info({ outcome: kind, durationMs: Math.round(took * 1000) }, 'job finished');
      return outcome;
    } catch (error) {
      if (error instanceof DelayedError || error instanceof RateLimitError) {
        // Put back without an attempt (unknown job type, database unreachable): not a failure.
        jobs.inc({ ...labels, outcome: 'postponed' });
        log.info({ durationMs: Math.round(seconds(started) * 1000) }, 'job postponed');
        throw error;
      }
      const final = error instanceof UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      const took = seconds(started);
      duration.observe({ ...labels, outcome: 'failed' }, took);
      jobs.inc({ ...labels, outcome: 'failed' });
      failures.inc({ ...labels, final: String(final) });
      log.warn({ final, durationMs: Math.round(took * 1000), error: redactError(error) }, 'job failed');
      throw error;
    }
  };
}

function seconds(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
}
