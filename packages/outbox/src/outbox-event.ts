/** Shapes shared by the writer, the dispatcher and the worker runtime. */

export interface OutboxEventInput {
  /** BullMQ queue the event is delivered to (letters, digits, `.`, `_`, `-`). */
  readonly queue: string;
  /** The job name in that queue: which handler runs. */
  readonly type: string;
  /** Ids, versions or immutable snapshots only; checked by the payload guard. */
  readonly payload: Record<string, unknown>;
  /** Event id = BullMQ jobId; generated (UUID v7, time-ordered) when absent. */
  readonly id?: string;
  /** Delivery attempts (dispatch failures, and handler attempts in the worker) before dead_letter. */
  readonly maxAttempts?: number;
  /** Earliest dispatch time; now when absent. */
  readonly availableAt?: Date;
}

/** A row claimed by a dispatcher: it holds the lease until `lockedUntil`. */
export interface ClaimedEvent {
  readonly id: string;
  readonly workspaceId: string;
  readonly queue: string;
  readonly type: string;
  readonly payload: Record<string, unknown>;
  readonly attemptCount: number;
  readonly maxAttempts: number;
  readonly createdAt: Date;
  readonly lockedUntil: Date;
  /**
   * The claim's lease token: lockedUntil to the microsecond, since the epoch (a bigint as text).
   * Releasing or failing the event matches it, so only this claim can settle the row.
   */
  readonly lease: string;
  /** W3C trace context stored by the writer (sql/023); null or absent when nothing was traced. */
  readonly traceparent?: string | null;
  readonly tracestate?: string | null;
}

/** The BullMQ job data of an outbox event. The job's name is the event type, its id the event id. */
export interface OutboxJobData {
  readonly v: 1;
  readonly workspaceId: string;
  readonly payload: Record<string, unknown>;
  /** Commit-side creation time (ms since epoch), for latency measurements. */
  readonly createdAt: number;
  /**
   * W3C trace context of the dispatcher's send span (or the one stored with the event), which the
   * worker's process span continues: delivery metadata, never part of `payload`. Absent when
   * nothing was traced; read leniently (a malformed one is ignored, never a poison job).
   */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

export interface DeadLetter {
  readonly id: string;
  readonly workspaceId: string;
  readonly queue: string;
  readonly type: string;
  readonly attemptCount: number;
  readonly lastError: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface OutboxQueueStats {
  readonly queue: string;
  readonly pending: number;
  readonly dispatching: number;
  readonly deadLetter: number;
  /** Age in ms of the oldest pending event (by creation), or null. */
  readonly oldestPendingAgeMs: number | null;
}

export const QUEUE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
export const EVENT_TYPE_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
