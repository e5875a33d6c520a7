import type { Database } from '@listing/db';
import type { Redis } from 'ioredis';
import { groupBy } from './group-by';
import { UUID_RE } from './outbox-event';
import { OutboxRepository, type StrandedEvent } from './outbox.repository';
import { redactText } from './redaction';

export interface FailedJobSweepOptions {
  readonly db: Database;
  /** A connection of the sweep's own (the owner closes it). */
  readonly redis: Redis;
  readonly prefix: string;
  readonly queues: readonly string[];
  /** Failed jobs looked up per round trip. */
  readonly pageSize?: number;
}

/** Workers stamp `finishedOn` with their own clocks: each sweep looks this far behind the last. */
const CLOCK_MARGIN_MS = 60_000;

/**
 * Dead-letters outbox events whose BullMQ job has failed for good while the event still says
 * 'dispatched'. The worker normally writes the dead letter before BullMQ fails the job, so such an
 * event means that write never happened: BullMQ failed a job by itself (stalled too often) and the
 * worker that saw it stopped before the database answered again, or the write itself failed.
 * Nobody would ever look at that event again; this sweep does, from BullMQ's failed set (kept for
 * the failed-job age): all of it on a worker's start, then what failed since the last sweep.
 */
export class FailedJobSweep {
  private readonly outbox: OutboxRepository;
  private readonly pageSize: number;
  /** Failures finished before this (ms, minus the margin) were already looked at; 0: none yet. */
  private since = 0;
  private stopped = false;

  constructor(private readonly options: FailedJobSweepOptions) {
    this.outbox = new OutboxRepository(options.db);
    this.pageSize = options.pageSize ?? 500;
  }

  stop(): void {
    this.stopped = true;
  }

  /** One sweep over every queue; returns the events dead-lettered. */
  async run(): Promise<number> {
    const startedAt = Date.now();
    const from = this.since ? this.since - CLOCK_MARGIN_MS : 0;
    let deadLettered = 0;
    for (const queue of this.options.queues) {
      const swept = await this.sweepQueue(queue, from);
      if (swept === null) return deadLettered; // stopped: the next sweep starts from the same point
      deadLettered += swept;
    }
    this.since = startedAt;
    return deadLettered;
  }

  private async sweepQueue(queue: string, from: number): Promise<number | null> {
    const failedKey = `${this.options.prefix}:${queue}:failed`;
    // Pages by score (finish time) rather than by rank: entries expiring at the low end would
    // shift ranks. `skip` steps over the entries at exactly `min` that were already read.
    let min = from;
    let skip = 0;
    let deadLettered = 0;
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
      if (outboxIds.length) deadLettered += await this.settle(queue, outboxIds);
      if (ids.length < this.pageSize) return deadLettered;
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

  /** Reads the failed jobs and dead-letters those whose event is still 'dispatched'. */
  private async settle(queue: string, ids: readonly string[]): Promise<number> {
    const pipeline = this.options.redis.pipeline();
    for (const id of ids)
      pipeline.hmget(`${this.options.prefix}:${queue}:${id}`, 'data', 'failedReason', 'attemptsMade');
    const replies = (await pipeline.exec()) ?? [];
    const stranded: Array<StrandedEvent & { workspaceId: string }> = [];
    ids.forEach((id, i) => {
      const [error, fields] = replies[i] ?? [null, null];
      if (error) throw error;
      const [data, reason, attempts] = (fields ?? []) as Array<string | null>;
      const workspaceId = workspaceOf(data);
      if (!workspaceId) return; // gone meanwhile (age), or not an outbox job
      stranded.push({
        id,
        workspaceId,
        attempts: Number(attempts ?? 0) || 1,
        error: redactText(`job failed in BullMQ without its dead letter: ${reason ?? 'no reason recorded'}`),
      });
    });
    let n = 0;
    for (const [workspaceId, events] of groupBy(stranded, (e) => e.workspaceId)) {
      n += await this.options.db.withWorkspace(workspaceId, () => this.outbox.deadLetterStranded(events));
    }
    return n;
  }
}

/** The workspace of an outbox job's data (see OutboxJobData), or null. */
function workspaceOf(data: string | null | undefined): string | null {
  if (!data) return null;
  try {
    const parsed = JSON.parse(data) as { v?: unknown; workspaceId?: unknown };
    return parsed.v === 1 && typeof parsed.workspaceId === 'string' && UUID_RE.test(parsed.workspaceId)
      ? parsed.workspaceId
      : null;
  } catch {
    return null;
  }
}
