import { defineFailures, type StepFailure } from '@listing/outbox';
import { OPERATION_FAILURES } from '../operations/operation.failures';
import { PlatformRejectedError, PlatformUnavailableError } from './platform.client';

/** How an operation ends when the marketplace or the AI vendor is the reason. */
export const PLATFORM_FAILURES = defineFailures({
  PLATFORM_UNAVAILABLE: 'the marketplace did not answer; retry later',
});

/**
 * The classification every remote step that calls the platform shares: a refusal is a verdict
 * (the capability's own `rejected` code), anything else is transient until the attempts run out.
 */
export function platformVerdict(error: unknown, rejected: StepFailure): StepFailure | undefined {
  return error instanceof PlatformRejectedError ? rejected : undefined;
}

/** The failure once the attempts are used up: the platform never answered, or something else. */
export function platformExhausted(error: unknown): StepFailure {
  return error instanceof PlatformUnavailableError
    ? PLATFORM_FAILURES.PLATFORM_UNAVAILABLE
    : OPERATION_FAILURES.INTERNAL_ERROR;
}
