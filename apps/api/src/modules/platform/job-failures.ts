import type { JobContext } from '@listing/outbox';
import { PlatformRejectedError, PlatformUnavailableError } from './platform.client';

/** A failure written for clients: a stable code and our own message, never provider text. */
export interface SafeError {
  code: string;
  message: string;
}

/**
 * The operation error after the outbox gave up on the job (dead letter; see OnOutboxDeadLetter):
 * every attempt failed, or its worker kept dying under it.
 */
export const ABANDONED: SafeError = {
  code: 'TASK_ABANDONED',
  message: 'the task failed repeatedly and was stopped; start it again',
};

/** A permanent business failure decided by a handler (e.g. the store is no longer active). */
export class PermanentJobError extends Error {
  constructor(readonly safe: SafeError) {
    super(safe.code);
  }
}

/** True on the last delivery attempt BullMQ will make of this job. */
export function isLastAttempt(context: JobContext): boolean {
  return context.attempt >= (context.job.opts.attempts ?? 1);
}

/**
 * Decides what a handler's error means: null → transient, let BullMQ retry (the operation stays
 * running); otherwise the safe error to fail the operation with. Unknown errors (a database
 * hiccup, a bug) retry too, and become a generic failure once the attempts are used up.
 */
export function permanentFailure(error: unknown, context: JobContext, rejected: SafeError): SafeError | null {
  if (error instanceof PermanentJobError) return error.safe;
  if (error instanceof PlatformRejectedError) return rejected;
  if (!isLastAttempt(context)) return null;
  if (error instanceof PlatformUnavailableError) {
    return { code: 'PLATFORM_UNAVAILABLE', message: 'the marketplace did not answer; retry later' };
  }
  return { code: 'INTERNAL_ERROR', message: 'the task could not be completed' };
}
