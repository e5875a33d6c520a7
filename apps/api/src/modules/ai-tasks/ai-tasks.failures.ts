import { defineFailures } from '@listing/outbox';

/** How an AI task's operation can end (besides the codes every operation shares). */
export const AI_TASK_FAILURES = defineFailures({
  AI_REQUEST_REJECTED: 'the AI vendor refused the request',
});
