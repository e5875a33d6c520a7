import { defineFailures } from '@listing/outbox';

/** How a store sync's operation can end (besides the codes every operation shares). */
export const STORE_SYNC_FAILURES = defineFailures({
  SYNC_REJECTED: 'the marketplace refused the product listing',
  SYNC_CURSOR_LOOP: 'the marketplace returned a page cursor it had already returned; the sync was stopped',
});
