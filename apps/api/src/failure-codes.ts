import { mergeFailures } from '@listing/outbox';
import { AI_TASK_FAILURES } from './modules/ai-tasks/ai-tasks.failures';
import { TRANSFER_FAILURES } from './modules/material-transfers/material-transfers.failures';
import { MEDIA_FAILURES } from './modules/media/media.failures';
import { OPERATION_FAILURES } from './modules/operations/operation.failures';
import { PLATFORM_FAILURES } from './modules/platform/platform.failures';
import { PUBLICATION_FAILURES } from './modules/publications/publications.failures';
import { STORE_SYNC_FAILURES } from './modules/store-syncs/store-syncs.failures';
import { STORE_FAILURES } from './modules/stores/stores.failures';

/**
 * Every code a failed operation's `error.code` can carry, with its message: one catalogue per
 * module (`*.failures.ts`), merged here for the OpenAPI document and docs/api.md (a test checks
 * the table there). A new module's catalogue is added to this list.
 */
export const FAILURE_CODES = mergeFailures(
  OPERATION_FAILURES,
  PLATFORM_FAILURES,
  STORE_FAILURES,
  PUBLICATION_FAILURES,
  STORE_SYNC_FAILURES,
  AI_TASK_FAILURES,
  MEDIA_FAILURES,
  TRANSFER_FAILURES,
);
