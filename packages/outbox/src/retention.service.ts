import type { Database } from '@listing/db';
import { z } from 'zod';
import { defineJob } from './job-definition';
import { RetentionRepository } from './retention.repository';

export interface RetentionOptions {
  /** Dispatched events older than this are deleted (ms). */
  readonly dispatchedRetentionMs: number;
  /** Inbox rows older than this are deleted (ms); keep it >= the dispatched retention. */
  readonly inboxRetentionMs: number;
  /** Rows per statement (<= 10,000). */
  readonly batchSize: number;
  /** Statements per table per run: bounds one run's work. */
  readonly maxBatches: number;
}

export const DEFAULT_RETENTION: RetentionOptions = {
  dispatchedRetentionMs: 7 * 24 * 3600_000,
  inboxRetentionMs: 30 * 24 * 3600_000,
  batchSize: 1000,
  maxBatches: 100,
};

export const RETENTION_QUEUE = 'outbox-maintenance';

/** Built-in system job: one retention run. Scheduled by the worker process. */
export const retentionJob = defineJob({
  name: 'outbox.retention',
  queue: RETENTION_QUEUE,
  scope: 'system',
  schema: z.object({}).loose(),
});

export interface RetentionReport {
  dispatched: number;
  inbox: number;
  idempotency: number;
}

/**
 * Deletes dispatched outbox events and inbox rows past their retention, and expired idempotency
 * records, in bounded batches (each its own short statement, so no long transaction and no long
 * lock).
 */
export class RetentionService {
  private readonly repository: RetentionRepository;

  constructor(
    db: Database,
    private readonly options: RetentionOptions = DEFAULT_RETENTION,
  ) {
    this.repository = new RetentionRepository(db);
  }

  async run(now = new Date()): Promise<RetentionReport> {
    const { batchSize } = this.options;
    const dispatchedBefore = new Date(now.getTime() - this.options.dispatchedRetentionMs);
    const inboxBefore = new Date(now.getTime() - this.options.inboxRetentionMs);
    return {
      dispatched: await this.batches(() => this.repository.purgeDispatched(dispatchedBefore, batchSize)),
      inbox: await this.batches(() => this.repository.purgeInbox(inboxBefore, batchSize)),
      idempotency: await this.batches(() => this.repository.purgeExpiredIdempotency(batchSize)),
    };
  }

  private async batches(step: () => Promise<number>): Promise<number> {
    let total = 0;
    for (let i = 0; i < this.options.maxBatches; i++) {
      const n = await step();
      total += n;
      if (n < this.options.batchSize) break;
    }
    return total;
  }
}
