import { z } from 'zod';
import { UUID_RE } from './outbox-event';
import type { FailedJobEvent } from './outbox.repository';
import { readTraceCarrier, type TraceCarrier } from './trace-context';

/**
 * The times a dead letter can be written with: years 1 to 9999, which toISOString() writes in the
 * form PostgreSQL reads (outside them it writes `+010000-…`, and PostgreSQL has no year 0).
 */
const MIN_TIME_MS = Date.parse('0001-01-01T00:00:00.000Z');
const MAX_TIME_MS = Date.parse('9999-12-31T23:59:59.999Z');
const writableTime = (ms: unknown): ms is number =>
  typeof ms === 'number' && ms >= MIN_TIME_MS && ms <= MAX_TIME_MS;
/** The most attempts a dead letter records (an integer column; BullMQ's own are far fewer). */
const MAX_ATTEMPTS = 1_000_000;

/** The envelope version this code writes and reads (OutboxJobData.v). */
export const ENVELOPE_VERSION = 1;

const outboxJobData = z.object({
  v: z.literal(ENVELOPE_VERSION),
  workspaceId: z.string().regex(UUID_RE),
  payload: z.record(z.string(), z.unknown()),
  createdAt: z.number().min(MIN_TIME_MS).max(MAX_TIME_MS), // written back as a timestamptz
});

/** An outbox job's data (OutboxJobData) as read back: the envelope, its trace context read leniently. */
export type JobEnvelope = z.infer<typeof outboxJobData> & TraceCarrier;

/**
 * Reads an outbox job's data, as the worker gets it or as the failed-job sweep reads it from
 * BullMQ's hash; null when it is no outbox envelope (a system job, another version's). A malformed
 * trace context is dropped, never a reason to refuse the envelope.
 */
export function readJobEnvelope(data: unknown): JobEnvelope | null {
  const parsed = outboxJobData.safeParse(data);
  return parsed.success ? { ...parsed.data, ...readTraceCarrier(data) } : null;
}

/**
 * The envelope version of a job's data when it is a later one than this code reads (a newer
 * dispatcher's, in a rolling upgrade), else null. Such a job waits for a worker that reads it.
 */
export function newerEnvelopeVersion(data: unknown): number | null {
  const v = (data as { v?: unknown } | null)?.v;
  return typeof v === 'number' && Number.isInteger(v) && v > ENVELOPE_VERSION ? v : null;
}

/**
 * The envelope of an outbox job that failed for good, read as far as it can be, to dead-letter its
 * event: this version's envelope, or a newer one's (or a damaged one) as long as it names its
 * workspace. What cannot be read falls back: the payload object as it stands, else none (a row
 * still there keeps its own; only a row written again gets `{}`), the job's own timestamp. Null
 * for a job that is no outbox event's (its id is no event id) or names no workspace.
 */
export function readFailedEnvelope(job: {
  id?: string | null;
  data: unknown;
  timestamp: number;
}): JobEnvelope | null {
  if (!job.id || !UUID_RE.test(job.id)) return null; // a system job (retention), not an event
  const envelope = readJobEnvelope(job.data);
  if (envelope) return envelope;
  const { workspaceId, payload, createdAt } = (job.data ?? {}) as Record<string, unknown>;
  if (typeof workspaceId !== 'string' || !UUID_RE.test(workspaceId)) return null;
  return {
    v: ENVELOPE_VERSION,
    workspaceId,
    payload:
      payload && typeof payload === 'object' && !Array.isArray(payload)
        ? (payload as Record<string, unknown>)
        : {},
    createdAt: writableTime(createdAt) ? createdAt : writableTime(job.timestamp) ? job.timestamp : Date.now(),
    ...readTraceCarrier(job.data),
  };
}

/**
 * What a job that failed for good leaves to dead-letter: the event as the job carries it, so a
 * row that is gone can be written again (the worker's dead letter and the failed-job sweep alike).
 */
export function failedJobEvent(
  job: { id: string; queue: string; type: string; maxAttempts: number | undefined },
  envelope: JobEnvelope,
  made: number,
  error: string,
): FailedJobEvent {
  const attempts = Math.min(Math.max(Math.trunc(made) || 1, 1), MAX_ATTEMPTS);
  return {
    id: job.id,
    workspaceId: envelope.workspaceId,
    queue: job.queue,
    type: job.type,
    payload: envelope.payload,
    maxAttempts: Math.min(job.maxAttempts ?? attempts, MAX_ATTEMPTS),
    createdAt: new Date(envelope.createdAt),
    traceparent: envelope.traceparent ?? null,
    tracestate: envelope.tracestate ?? null,
    attempts,
    error,
  };
}
