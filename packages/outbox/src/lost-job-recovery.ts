import type { Database } from '@listing/db';
import { groupBy } from './group-by';
import { silentLogger, type OutboxLogger } from './outbox-logger';
import { OutboxRepository, type DispatchedEvent, type DispatchedRef } from './outbox.repository';
import type { QueueProducer } from './queue-producer';
import { redisClockMs } from './redis-connection';

export interface LostJobRecoveryOptions {
  readonly db: Database;
  readonly producer: QueueProducer;
  /** Who holds the sweep lock (the dispatcher's id). */
  readonly owner: string;
  /**
   * How far back dispatched events are checked, in seconds: BullMQ keeps completed jobs this long
   * (the producer's completedAgeSec), so within it a missing job was lost, not completed and
   * removed. Older events cannot be told apart and are left alone.
   */
  readonly windowSec: number;
  /**
   * The dispatch lease (ms). A job added to the old server just before it went down can be
   * marked dispatched after the first sweep has passed it; a second sweep over the events
   * dispatched since the first, two leases later, finds it.
   */
  readonly leaseMs: number;
  /** Added to the two leases before the second sweep (ms, default 5000; tests shorten it). */
  readonly settleMarginMs?: number;
  /** Events checked per page (one listing, one pipelined EXISTS per queue, one update per workspace). */
  readonly pageSize?: number;
  /** The sweep lock's time to live, renewed after every page (ms). */
  readonly lockTtlMs?: number;
  readonly logger?: OutboxLogger;
}

export interface RecoveryReport {
  /** The Redis run id the sweep was for. */
  readonly runId: string;
  /** Dispatched events whose job was looked up. */
  readonly checked: number;
  /** Events put back to pending because their job was gone. */
  readonly requeued: number;
  /** Workspaces that got events back (to wake the dispatcher for). */
  readonly workspaceIds: readonly string[];
  /** False when the sweep stopped early (shutdown, lock lost): the next check sweeps again. */
  readonly complete: boolean;
}

/** Completed-job ages and dispatchers' clocks are other clocks than PostgreSQL's dispatch times. */
const CLOCK_MARGIN_MS = 60_000;

/**
 * The record after the first sweep of a run: `<run id>:second-sweep-from:<ms>`. The second sweep
 * covers the events dispatched since then (minus the clock margin).
 */
const SECOND_SWEEP = ':second-sweep-from:';

function parseMarker(value: string | null): { runId: string; secondSweepFrom: number | null } | null {
  if (!value) return null;
  const i = value.indexOf(SECOND_SWEEP);
  if (i < 0) return { runId: value, secondSweepFrom: null };
  const from = Number(value.slice(i + SECOND_SWEEP.length));
  return { runId: value.slice(0, i), secondSweepFrom: Number.isFinite(from) ? from : 0 };
}

const RELEASE_IF_OWNER = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;
const RENEW_IF_OWNER = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`;

/**
 * Puts back to pending the dispatched events whose BullMQ job Redis has lost.
 *
 * The outbox marks an event dispatched once BullMQ accepted its job, so from then on only Redis
 * holds the work. A restart without persistence, the last second of an append-only file, or a
 * failover to a lagging replica can lose such jobs. Every Redis start has a new run id: the last
 * run id swept is kept beside BullMQ's keys, so a restart shows as a difference (and a Redis that
 * lost everything has lost that key too). Then one dispatcher (a lock) walks the events dispatched
 * within the window, looks their jobs up, and requeues those without one; the dispatcher delivers
 * them again. Two leases later a second sweep covers what was marked dispatched since the first (a
 * mark can arrive late for an add the old server took with it). Workers are re-entrant, so a job
 * that had in fact run is absorbed as a redelivery.
 *
 * One BullMQ prefix per database: a second prefix over the same outbox would see the first one's
 * jobs as lost.
 */
export class LostJobRecovery {
  private readonly repository: OutboxRepository;
  private readonly logger: OutboxLogger;
  private readonly pageSize: number;
  private readonly lockTtlMs: number;
  private readonly settleMarginMs: number;
  private stopped = false;

  constructor(private readonly options: LostJobRecoveryOptions) {
    this.repository = new OutboxRepository(options.db);
    this.logger = options.logger ?? silentLogger;
    this.pageSize = options.pageSize ?? 1000;
    this.lockTtlMs = options.lockTtlMs ?? 60_000;
    this.settleMarginMs = options.settleMarginMs ?? 5000;
  }

  private get runKey(): string {
    return `${this.options.producer.keyPrefix}:outbox:swept-redis-run`;
  }

  private get lockKey(): string {
    return `${this.options.producer.keyPrefix}:outbox:lost-job-sweep`;
  }

  /**
   * Sweeps if Redis has a run id no sweep has been recorded for (a first start, a restart, a
   * failover, or data lost with the record), and once more over the events dispatched since, when
   * the marks that could still arrive for adds the old server took have arrived. Returns the
   * sweep's report, or null when no sweep was due or another dispatcher holds the lock.
   */
  async check(): Promise<RecoveryReport | null> {
    if (this.stopped) return null;
    const redis = this.options.producer.redis;
    const runId = await this.options.producer.redisRunId();
    const marker = parseMarker(await redis.get(this.runKey));
    if (marker?.runId === runId && marker.secondSweepFrom === null) return null;
    const second = marker?.runId === runId ? marker.secondSweepFrom : null;
    const now = await redisClockMs(redis, this.runKey); // every dispatcher reads the same clock for the marker
    // A mark may come up to a lease, plus the reclaim that ends it, after its claim.
    if (second !== null && now - second < 2 * this.options.leaseMs + this.settleMarginMs) return null;
    if ((await redis.set(this.lockKey, this.options.owner, 'PX', this.lockTtlMs, 'NX')) !== 'OK') return null;
    try {
      // Completed jobs are kept windowSec from their finish; an event is marked up to two leases
      // after its job was added (and maybe finished), on another clock.
      const oldest =
        now - Math.max(0, this.options.windowSec * 1000 - CLOCK_MARGIN_MS - 2 * this.options.leaseMs);
      const since = second === null ? oldest : Math.max(oldest, second - CLOCK_MARGIN_MS);
      this.logger.info(
        second === null
          ? 'no lost-job sweep recorded for this Redis run (first start, restart, failover or lost data): sweeping'
          : 'second lost-job sweep for this Redis run (marks that arrived late)',
        { redisRunId: runId, since: new Date(since).toISOString() },
      );
      const report = await this.sweep(runId, new Date(since));
      // Recorded only after a whole sweep: one cut short runs again from the start next time.
      if (report.complete)
        await redis.set(this.runKey, second === null ? `${runId}${SECOND_SWEEP}${now}` : runId);
      const log = report.requeued ? this.logger.warn : this.logger.info;
      log.call(this.logger, 'lost-job sweep finished', {
        ...report,
        workspaceIds: report.workspaceIds.length,
      });
      return report;
    } finally {
      await redis.eval(RELEASE_IF_OWNER, 1, this.lockKey, this.options.owner).catch(() => undefined);
    }
  }

  /** Lets sweeps run again after stop() (the dispatcher restarted). */
  resume(): void {
    this.stopped = false;
  }

  /** Ends a sweep in progress after its current page. */
  stop(): void {
    this.stopped = true;
  }

  private async sweep(runId: string, since: Date): Promise<RecoveryReport> {
    const workspaces = new Set<string>();
    let after: DispatchedRef | null = null;
    let checked = 0;
    let requeued = 0;
    const report = (complete: boolean): RecoveryReport => ({
      runId,
      checked,
      requeued,
      workspaceIds: [...workspaces],
      complete,
    });
    for (;;) {
      if (this.stopped) return report(false);
      const page = await this.repository.dispatchedSince(since, after, this.pageSize);
      if (!page.length) return report(true);
      after = page[page.length - 1]!;
      checked += page.length;
      const lost: DispatchedEvent[] = [];
      for (const [queue, events] of groupBy(page, (e) => e.queue)) {
        const missing = new Set(
          await this.options.producer.missingJobs(
            queue,
            events.map((e) => e.id),
          ),
        );
        lost.push(...events.filter((e) => missing.has(e.id)));
      }
      for (const [workspaceId, events] of groupBy(lost, (e) => e.workspaceId)) {
        // A normal commit: the sweep is recorded as done right after, so a requeue lost in a
        // database crash would not be found again.
        const n = await this.options.db.withWorkspace(workspaceId, () => this.repository.requeueLost(events));
        requeued += n;
        if (n) workspaces.add(workspaceId);
      }
      if (page.length < this.pageSize) return report(true);
      const renewed = await this.options.producer.redis.eval(
        RENEW_IF_OWNER,
        1,
        this.lockKey,
        this.options.owner,
        String(this.lockTtlMs),
      );
      if (renewed !== 1) return report(false);
    }
  }
}
