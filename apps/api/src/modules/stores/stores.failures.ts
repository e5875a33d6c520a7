import { defineFailures } from '@listing/outbox';
import { gone } from '../operations/operation.failures';

/** How a store's operations (credential verification) and the jobs acting on a store can end. */
export const STORE_FAILURES = {
  ...defineFailures({
    STORE_CREDENTIALS_INVALID: 'the marketplace rejected the store credentials',
    CREDENTIALS_SUPERSEDED: 'the credentials were replaced before they could be verified',
    STORE_VERIFICATION_FAILED: 'the credentials could not be verified; replace them to try again',
    CREDENTIALS_UNREADABLE: 'the stored credentials cannot be read; replace them',
    STORE_NOT_ACTIVE: 'the store has no verified credentials',
    PLATFORM_REJECTED: 'the marketplace refused the verification request',
  }),
  STORE_GONE: gone('the store no longer exists'),
  CREDENTIALS_MISSING: gone('the store credentials are missing'),
};
