import { v7 as uuidv7 } from 'uuid';
import type { Database } from '@listing/db';
import type { JobDefinition } from './job-definition';
import { OutboxError } from './outbox-error';
import { EVENT_TYPE_RE, QUEUE_NAME_RE, UUID_RE, type OutboxEventInput } from './outbox-event';
import type { OutboxFaults } from './outbox-faults';
import { OutboxRepository } from './outbox.repository';
import { assertSafePayload } from './payload-guard';
import { traceOutboxCreate } from './trace-context';

/** Delivery attempts of an event that names none: outbox_events.max_attempts' column default too. */
export const DEFAULT_MAX_ATTEMPTS = 10;

export interface OutboxWriterOptions {
  /** Post-commit wake-up of the dispatcher (OutboxNudger). Without it the dispatcher polls. */
  readonly nudger?: { nudge(workspaceId?: string): void };
  /** Test-only crash points (after-business-commit fires after the commit of any append). */
  readonly faults?: OutboxFaults;
  readonly defaultMaxAttempts?: number;
}

/**
 * Appends outbox events to the caller's transaction. Refuses to run outside an ambient
 * transaction or without a bound workspace: an event must commit or roll back with the business
 * rows that caused it.
 */
export class OutboxWriter {
  private readonly repository: OutboxRepository;

  constructor(
    private readonly db: Database,
    private readonly options: OutboxWriterOptions = {},
  ) {
    this.repository = new OutboxRepository(db);
  }

  async append(event: OutboxEventInput): Promise<{ id: string }> {
    this.db.requireTransaction('outbox append');
    const workspaceId = this.db.currentWorkspaceId();
    if (!workspaceId) {
      throw new OutboxError(
        'OUTBOX_NO_WORKSPACE',
        'outbox append needs a transaction bound to a workspace (Database.withWorkspace)',
      );
    }
    if (!QUEUE_NAME_RE.test(event.queue)) {
      throw new OutboxError('OUTBOX_INVALID_EVENT', `invalid queue name ${JSON.stringify(event.queue)}`);
    }
    if (!EVENT_TYPE_RE.test(event.type)) {
      throw new OutboxError('OUTBOX_INVALID_EVENT', `invalid event type ${JSON.stringify(event.type)}`);
    }
    // Time-ordered (v7): new events and their updates land at the right edge of the primary-key
    // index, so a large dispatched history costs the claim and the marks nothing.
    const id = event.id ?? uuidv7();
    if (!UUID_RE.test(id)) throw new OutboxError('OUTBOX_INVALID_EVENT', 'event id must be a UUID');
    const maxAttempts = event.maxAttempts ?? this.options.defaultMaxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1000) {
      throw new OutboxError('OUTBOX_INVALID_EVENT', 'maxAttempts must be an integer in 1..1000');
    }
    assertSafePayload(event.payload);
    // The request's trace context goes with the event, beside the payload (sql/023); null when
    // nothing is traced.
    const trace = traceOutboxCreate({ queue: event.queue, type: event.type, id, workspaceId });
    await this.repository.insert({
      id,
      workspaceId,
      queue: event.queue,
      type: event.type,
      payload: event.payload,
      maxAttempts,
      availableAt: event.availableAt ?? null,
      traceparent: trace?.traceparent ?? null,
      tracestate: trace?.tracestate ?? null,
    });
    const { nudger, faults } = this.options;
    if (nudger) this.db.afterCommit(() => nudger.nudge(workspaceId));
    if (faults?.isArmed('after-business-commit')) this.db.afterCommit(() => faults.afterBusinessCommit());
    return { id };
  }

  /** Appends an event for a defined job; the payload is validated by the job's schema first. */
  async appendJob<P extends Record<string, unknown>>(
    job: JobDefinition<P>,
    payload: P,
    options: { id?: string; maxAttempts?: number; availableAt?: Date } = {},
  ): Promise<{ id: string }> {
    const parsed = job.schema.safeParse(payload);
    if (!parsed.success) {
      throw new OutboxError('OUTBOX_INVALID_EVENT', `payload does not match job ${job.name}`, {
        issues: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`),
      });
    }
    return this.append({
      queue: job.queue,
      type: job.name,
      payload: parsed.data,
      id: options.id,
      maxAttempts: options.maxAttempts ?? job.maxAttempts,
      availableAt: options.availableAt,
    });
  }
}
