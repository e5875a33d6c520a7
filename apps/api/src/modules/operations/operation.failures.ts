import { defineFailures } from '@listing/outbox';

/** How any operation can end, whatever its capability (each capability adds its own codes). */
export const OPERATION_FAILURES = defineFailures({
  /** The outbox gave up on the job (dead letter): every attempt failed, or its worker kept dying. */
  TASK_ABANDONED: 'the task failed repeatedly and was stopped; start it again',
  /** The resource the operation works on was deleted (a step may name it in its message). */
  RESOURCE_GONE: 'the resource no longer exists',
  /** Attempts used up on an error that is neither the provider's nor a verdict (a bug, an outage). */
  INTERNAL_ERROR: 'the task could not be completed',
});

/** RESOURCE_GONE with a message naming what is gone. */
export const gone = (message: string) => ({ code: OPERATION_FAILURES.RESOURCE_GONE.code, message });
