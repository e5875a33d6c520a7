import type { Job } from 'bullmq';
import type { z } from 'zod';
import { OutboxError } from './outbox-error';
import { EVENT_TYPE_RE, QUEUE_NAME_RE } from './outbox-event';

/**
 * A job the worker runtime knows: its name (the outbox event type), the queue it travels in, the
 * zod schema of its payload and how the runtime wraps its handler.
 *
 * - scope `workspace` (outbox events): the handler runs in a transaction bound to the event's
 *   workspace; with `inbox: true` (the default) the runtime records the event id in the inbox in
 *   that same transaction and skips a redelivered event, making database-only effects exactly
 *   once.
 *   With `transaction: false` the runtime opens no transaction: the handler opens its own short
 *   ones (`Database.withWorkspace`), for work that waits on something slow outside the database
 *   (fetching a source, a provider call) and must not hold a pooled connection and its row locks
 *   meanwhile. There is no automatic inbox then (it lives in the handler's transaction): such a
 *   handler is re-entrant through its own conditional state transitions.
 * - scope `system` (scheduled maintenance such as retention): no workspace, no inbox.
 */
export interface JobDefinition<P extends Record<string, unknown> = Record<string, unknown>> {
  readonly name: string;
  readonly queue: string;
  readonly schema: z.ZodType<P>;
  readonly scope: 'workspace' | 'system';
  readonly inbox: boolean;
  /** The runtime wraps the handler in a transaction bound to the workspace (workspace scope). */
  readonly transaction: boolean;
  readonly maxAttempts?: number;
}

export function defineJob<P extends Record<string, unknown>>(definition: {
  name: string;
  queue: string;
  schema: z.ZodType<P>;
  scope?: 'workspace' | 'system';
  inbox?: boolean;
  transaction?: boolean;
  maxAttempts?: number;
}): JobDefinition<P> {
  if (!EVENT_TYPE_RE.test(definition.name)) {
    throw new OutboxError('OUTBOX_INVALID_EVENT', `invalid job name ${JSON.stringify(definition.name)}`);
  }
  if (!QUEUE_NAME_RE.test(definition.queue)) {
    throw new OutboxError('OUTBOX_INVALID_EVENT', `invalid queue name ${JSON.stringify(definition.queue)}`);
  }
  const scope = definition.scope ?? 'workspace';
  const transaction = scope === 'workspace' && definition.transaction !== false;
  if (scope === 'workspace' && !transaction && definition.inbox === true) {
    throw new OutboxError(
      'OUTBOX_INVALID_JOB',
      `job ${definition.name}: the inbox needs the runtime's transaction (inbox: true with transaction: false)`,
    );
  }
  return Object.freeze({
    name: definition.name,
    queue: definition.queue,
    schema: definition.schema,
    scope,
    inbox: transaction && (definition.inbox ?? true),
    transaction,
    maxAttempts: definition.maxAttempts,
  });
}

/** What a handler gets besides its parsed payload. */
export interface JobContext {
  /** The outbox event id (= BullMQ job id). */
  readonly eventId: string;
  /**
   * The event's workspace, bound to the ambient transaction (unless the job runs with
   * `transaction: false`); null for system jobs.
   */
  readonly workspaceId: string | null;
  /** 1 for the first delivery attempt of this BullMQ job. */
  readonly attempt: number;
  readonly job: Job;
  /**
   * Records `key` (default: this job's name) for this event in the inbox, in the current
   * transaction (which must be bound to the event's workspace). True the first time. For handlers
   * that guard only part of their work.
   */
  inboxOnce(key?: string): Promise<boolean>;
}

export type JobHandler<P = Record<string, unknown>> = (payload: P, context: JobContext) => Promise<unknown>;

/** What a dead-letter reaction gets besides the parsed payload (see OnOutboxDeadLetter). */
export interface DeadLetterContext {
  readonly eventId: string;
  /** Bound to the ambient transaction the reaction runs in. */
  readonly workspaceId: string;
}

export type DeadLetterReaction<P = Record<string, unknown>> = (
  payload: P,
  context: DeadLetterContext,
) => Promise<void>;
