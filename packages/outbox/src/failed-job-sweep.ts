import { PgErrorCode, pgErrorCode, type Database } from '@listing/db';
import type { RedisClient } from './redis-connection';
import { groupBy } from './group-by';
import { silentLogger, type OutboxLogger } from './outbox-logger';
import { failedJobEvent, readFailedEnvelope } from './job-envelope';
import { UUID_RE } from './outbox-event';
import { OutboxRepository, type FailedJobEvent } from './outbox.repository';
import { redactError, redactText } from './redaction';
import { redisClockMs } from './redis-connection';

export interface FailedJobSweepOptions {
  readonly db: Database;
  /** A connection of the sweep's own (the owner closes it). */
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly queues: readonly string[];
  /** Failed jobs looked up per round trip. */
  readonly pageSize?: number;
  readonly logger?: OutboxLogger;
}

/** Workers stamp `finishedOn` with their own clocks: each sweep looks this far behind the last. */
const CLOCK_MARGIN_MS = 60_000;

/**
 * Dead-letters outbox events whose BullMQ job has failed for good while the event still says
 * 'dispatched', or is gone (deleted by a retention shorter than the job's life): written again from
 * the job, as the worker's own dead letter would be, so its reaction still runs. The worker
 * normally writes the dead letter before BullMQ fails the job, so such an event means that write
 * never happened: BullMQ failed a job by itself (stalled too often) and the worker that saw it
 * stopped before the database answered again, or the write itself failed.
 * Nobody would ever look at that event again; this sweep does, from BullMQ's failed set (kept for
 * the failed-job age). Each queue's high-water mark (the start of the last complete sweep) is kept
 * beside BullMQ's keys, so every worker, also a new one, reads only what failed since.
 */
export class FailedJobSweep {
  private readonly outbox: OutboxRepository;
  private readonly pageSize: number;
  private readonly logger: OutboxLogger;
  private stopped = false;

  constructor(private readonly options: FailedJobSweepOptions) {
    this.outbox = new OutboxRepository(options.db);
    this.pageSize = options.pageSize ?? 500;
    this.logger = options.logger ?? silentLogger;
  }

  stop(): void {
    this.stopped = true;
  }

  private sweptUntilKey(queue: string): string {
    return `${this.options.prefix}:outbox:failed-swept-until:${queue}`;
  }

  /** One sweep over every queue; returns the events dead-lettered. */
  async run(): Promise<number> {
    let deadLettered = 0;
    for (const queue of this.options.queues) {
      const redis = this.options.redis;
      const startedAt = await redisClockMs(redis, this.sweptUntilKey(queue)); // one clock for every worker's marks
      const until = Number(await redis.get(this.sweptUntilKey(queue))) || 0;
      const swept = await this.sweepQueue(queue, until ? until - CLOCK_MARGIN_MS : 0);
      if (!swept) return deadLettered; // stopped
      deadLettered += swept.deadLettered;
      // Not raised when a group failed: those jobs are read again next time. Never lowered:
      // another worker's sweep may have finished later.
      if (swept.complete) await redis.eval(RAISE_TO, 1, this.sweptUntilKey(queue), String(startedAt));
    }
    return deadLettered;
  }

  private async sweepQueue(
    queue: string,
    from: number,
  ): Promise<{ deadLettered: number; complete: boolean } | null> {
    const failedKey = `${this.options.prefix}:${queue}:failed`;
    // Pages by score (finish time) rather than by rank: entries expiring at the low end would
    // shift ranks. `skip` steps over the entries at exactly `min` that were already read.
    let min = from;
    let skip = 0;
    let deadLettered = 0;
    let complete = true;
    for (;;) {
      if (this.stopped) return null;
      const page = await this.options.redis.zrangebyscore(
        failedKey,
        min,
        '+inf',
        'WITHSCORES',
        'LIMIT',
        skip,
        this.pageSize,
      );
      const ids = page.filter((_, i) => i % 2 === 0);
      const outboxIds = ids.filter((id) => UUID_RE.test(id)); // system jobs (retention) have other ids
      if (outboxIds.length) {
        const settled = await this.settle(queue, outboxIds);
        deadLettered += settled.deadLettered;
        complete &&= settled.complete;
      }
      if (ids.length < this.pageSize) return { deadLettered, complete };
      const scores = page.filter((_, i) => i % 2 === 1).map(Number);
      const last = scores[scores.length - 1]!;
      const atLast = scores.filter((score) => score === last).length;
      if (last === min) skip += atLast;
      else {
        min = last;
        skip = atLast;
      }
    }
  }

  /** Reads the failed jobs and dead-letters those whose event is still 'dispatched', or gone. */
  private async settle(
    queue: string,
    ids: readonly string[],
  ): Promise<{ deadLettered: number; complete: boolean }> {
    // The database's clock before the jobs are read: an event dispatched again after that (an
    // operator's retry removed the failed job, then the dispatcher re-added it) is not touched.
    const readAt = await this.outbox.now();
    // Membership and the job's fields in one transaction: a job no longer in the failed set (retried
    // from the dashboard, removed) is skipped. BullMQ 6 stores attemptsMade as `atm`.
    const failedKey = `${this.options.prefix}:${queue}:failed`;
    const multi = this.options.redis.multi();
    for (const id of ids) {
      multi.zscore(failedKey, id);
      multi.hmget(`${this.options.prefix}:${queue}:${id}`, ...JOB_FIELDS);
    }
    const replies = (await multi.exec()) ?? [];
    const stranded: FailedJobEvent[] = [];
    ids.forEach((id, i) => {
      const [scoreError, score] = replies[2 * i] ?? [new Error('no reply'), null];
      const [fieldsError, fields] = replies[2 * i + 1] ?? [new Error('no reply'), null];
      if (scoreError) throw scoreError;
      if (fieldsError) throw fieldsError;
      if (score === null) return; // left the failed set meanwhile
      const [data, reason, atm, attemptsMade, name, opts, timestamp] = (fields ?? []) as Array<string | null>;
      const envelope = readFailedEnvelope({ id, data: parseJson(data), timestamp: Number(timestamp ?? NaN) });
      if (!envelope || !name) return; // gone meanwhile (age), or not an outbox job
      const error = redactText(
        `job failed in BullMQ without its dead letter: ${reason ?? 'no reason recorded'}`,
      );
      const attempts = Number(atm ?? attemptsMade ?? 0) || 1;
      const job = { id, queue, type: name, maxAttempts: attemptsOf(opts) };
      stranded.push(failedJobEvent(job, envelope, attempts, error));
    });
    let deadLettered = 0;
    let complete = true;
    for (const [workspaceId, events] of groupBy(stranded, (e) => e.workspaceId)) {
      const settled = await this.settleWorkspace(queue, workspaceId, events, readAt);
      deadLettered += settled.deadLettered;
      complete &&= settled.complete;
    }
    return { deadLettered, complete };
  }

  /**
   * Dead-letters one workspace's stranded events. One workspace's failure must not hold up the
   * others: logged, and the sweep is not recorded as complete, so these jobs are read again next
   * time. What can never succeed is not retried: a deleted workspace, or a job whose data
   * PostgreSQL refuses (class 22: a forged payload, say), found event by event.
   */
  private async settleWorkspace(
    queue: string,
    workspaceId: string,
    events: readonly FailedJobEvent[],
    readAt: string,
  ): Promise<{ deadLettered: number; complete: boolean }> {
    try {
      const settled = await this.options.db.withWorkspace(workspaceId, () =>
        this.outbox.deadLetterStranded(events, readAt),
      );
      if (settled.recreated) {
        // Deleted by hand, or by a retention shorter than the job's life (see the worker's).
        this.logger.warn('failed-job sweep: dead letters written again for events that were deleted', {
          queue,
          workspace: workspaceId,
          events: settled.recreated,
        });
      }
      return { deadLettered: settled.deadLettered + settled.recreated, complete: true };
    } catch (error) {
      const code = pgErrorCode(error);
      if (code === PgErrorCode.foreignKeyViolation) {
        // The workspace itself is gone: nothing is left to dead-letter or to react for.
        this.logger.warn('failed-job sweep: jobs of a deleted workspace skipped', {
          queue,
          workspace: workspaceId,
          events: events.length,
        });
        return { deadLettered: 0, complete: true };
      }
      if (code?.startsWith('22') && events.length > 1) {
        let deadLettered = 0;
        let complete = true;
        for (const event of events) {
          const settled = await this.settleWorkspace(queue, workspaceId, [event], readAt);
          deadLettered += settled.deadLettered;
          complete &&= settled.complete;
        }
        return { deadLettered, complete };
      }
      if (code?.startsWith('22')) {
        this.logger.error('failed-job sweep: a failed job PostgreSQL cannot store is skipped', {
          queue,
          workspace: workspaceId,
          event: events[0]!.id,
          error: redactError(error),
        });
        return { deadLettered: 0, complete: true };
      }
      this.logger.warn('failed-job sweep: dead letters not written', {
        queue,
        workspace: workspaceId,
        events: events.length,
        error: redactError(error),
      });
      return { deadLettered: 0, complete: false };
    }
  }
}

/** The fields of a job's hash the sweep reads (BullMQ's names; `atm` is attemptsMade in BullMQ 6). */
const JOB_FIELDS = ['data', 'failedReason', 'atm', 'attemptsMade', 'name', 'opts', 'timestamp'] as const;

/** SET key to ARGV[1] unless it already holds a larger number. */
const RAISE_TO = `local v = tonumber(redis.call('get', KEYS[1]) or '0') if tonumber(ARGV[1]) > v then redis.call('set', KEYS[1], ARGV[1]) end return 1`;

function parseJson(text: string | null | undefined): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The attempts a job was added with (its `opts`), when readable. */
function attemptsOf(opts: string | null | undefined): number | undefined {
  const attempts = (parseJson(opts) as { attempts?: unknown } | null)?.attempts;
  return typeof attempts === 'number' && Number.isInteger(attempts) && attempts > 0 ? attempts : undefined;
}
