import { z } from 'zod';
import { UUID_RE } from './outbox-event';
import type { FailedJobEvent } from './outbox.repository';
import { readTraceCarrier, type TraceCarrier } from './trace-context';

/** The largest time a Date holds (ms either side of the epoch). */
const MAX_DATE_MS = 8.64e15;

/** The envelope version this code writes and reads (OutboxJobData.v). */
export const ENVELOPE_VERSION = 1;

const outboxJobData = z.object({
  v: z.literal(ENVELOPE_VERSION),
  workspaceId: z.string().regex(UUID_RE),
  payload: z.record(z.string(), z.unknown()),
  createdAt: z.number().min(-MAX_DATE_MS).max(MAX_DATE_MS), // a Date's range: it is written as one
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
 * The envelope of a job that failed for good, read as far as it can be, to dead-letter its event:
 * this version's envelope, or a newer one's (or a damaged one) as long as it names its workspace.
 * What cannot be read falls back: no payload (a row still there keeps its own; only a row written
 * again gets `{}`), the job's own timestamp. Null without a workspace: nothing can be written.
 */
export function readFailedEnvelope(data: unknown, jobTimestamp: number): JobEnvelope | null {
  const envelope = readJobEnvelope(data);
  if (envelope) return envelope;
  const { workspaceId, payload, createdAt } = (data ?? {}) as Record<string, unknown>;
  if (typeof workspaceId !== 'string' || !UUID_RE.test(workspaceId)) return null;
  return {
    v: ENVELOPE_VERSION,
    workspaceId,
    payload:
      payload && typeof payload === 'object' && !Array.isArray(payload)
        ? (payload as Record<string, unknown>)
        : {},
    createdAt: typeof createdAt === 'number' && Math.abs(createdAt) <= MAX_DATE_MS ? createdAt : jobTimestamp,
    ...readTraceCarrier(data),
  };
}

/**
 * What a job that failed for good leaves to dead-letter: the event as the job carries it, so a
 * row that is gone can be written again (the worker's dead letter and the failed-job sweep alike).
 */
export function failedJobEvent(
  job: { id: string; queue: string; type: string; maxAttempts: number | undefined },
  envelope: JobEnvelope,
  attempts: number,
  error: string,
): FailedJobEvent {
  return {
    id: job.id,
    workspaceId: envelope.workspaceId,
    queue: job.queue,
    type: job.type,
    payload: envelope.payload,
    maxAttempts: job.maxAttempts ?? attempts,
    createdAt: new Date(envelope.createdAt),
    traceparent: envelope.traceparent ?? null,
    tracestate: envelope.tracestate ?? null,
    attempts,
    error,
  };
}
