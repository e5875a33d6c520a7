import { z } from 'zod';
import { UUID_RE } from './outbox-event';
import type { FailedJobEvent } from './outbox.repository';
import { readTraceCarrier, type TraceCarrier } from './trace-context';

const outboxJobData = z.object({
  v: z.literal(1),
  workspaceId: z.string().regex(UUID_RE),
  payload: z.record(z.string(), z.unknown()),
  createdAt: z.number(),
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
