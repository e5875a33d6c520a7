import type { Database } from '@listing/db';
import { OutboxError } from './outbox-error';
import type { DeadLetter } from './outbox-event';
import { OutboxRepository } from './outbox.repository';
import type { QueueProducer } from './queue-producer';

export interface RetriedDeadLetter {
  readonly id: string;
  readonly workspaceId: string;
  readonly queue: string;
  readonly type: string;
  readonly previousAttempts: number;
}

/**
 * Operator actions on dead letters. A retry removes the leftover BullMQ job with the same id (a
 * failed job would otherwise make the re-add a no-op), then — in a transaction bound to the
 * event's workspace — puts the event back to pending with a fresh attempt budget and lets the
 * caller record the action (audit) in that same transaction. A job still active (its worker wrote
 * the dead letter on its last attempt and has not ended it yet) cannot be removed: the retry is
 * refused (OUTBOX_JOB_ACTIVE) rather than re-adding under an id BullMQ still holds, which would
 * mark the event dispatched with nothing to run it.
 */
export class DeadLetterService {
  private readonly repository: OutboxRepository;

  constructor(
    private readonly db: Database,
    private readonly producer: QueueProducer,
  ) {
    this.repository = new OutboxRepository(db);
  }

  list(filter: { queue?: string | null } = {}, limit = 100): Promise<DeadLetter[]> {
    return this.repository.deadLetters({ queue: filter.queue ?? null }, limit);
  }

  async retry(
    id: string,
    record?: (retried: RetriedDeadLetter) => Promise<void>,
  ): Promise<RetriedDeadLetter> {
    const [dead] = await this.repository.deadLetters({ id }, 1);
    if (!dead) throw new OutboxError('OUTBOX_NOT_DEAD_LETTER', `event ${id} is not a dead letter`);
    const removed = await this.producer.removeJob(dead.queue, dead.id);
    if (!removed && !(await this.producer.missingJobs(dead.queue, [dead.id])).length) {
      throw new OutboxError(
        'OUTBOX_JOB_ACTIVE',
        `event ${id}'s job is still running: retry once it has ended`,
      );
    }
    return this.db.withWorkspace(dead.workspaceId, async () => {
      const row = await this.repository.retryDeadLetter(dead.id);
      if (!row) throw new OutboxError('OUTBOX_NOT_DEAD_LETTER', `event ${id} is no longer a dead letter`);
      const retried: RetriedDeadLetter = {
        id: dead.id,
        workspaceId: dead.workspaceId,
        queue: row.queue,
        type: row.type,
        previousAttempts: row.attemptCount,
      };
      await record?.(retried);
      return retried;
    });
  }

  async retryAll(
    filter: { queue?: string | null } = {},
    record?: (retried: RetriedDeadLetter) => Promise<void>,
  ): Promise<RetriedDeadLetter[]> {
    const done: RetriedDeadLetter[] = [];
    const seen = new Set<string>();
    for (;;) {
      const batch = (await this.list(filter, 500)).filter((d) => !seen.has(d.id));
      if (!batch.length) return done;
      for (const dead of batch) {
        seen.add(dead.id);
        done.push(await this.retry(dead.id, record));
      }
    }
  }
}
