import { defineFailures } from '@listing/outbox';

/**
 * How a material transfer can end (besides the codes every operation shares, and the image
 * verdicts of media, which a fetched source gets too). The fetch and image verdicts carry a
 * message of their own that says what exactly went wrong.
 */
export const TRANSFER_FAILURES = defineFailures({
  SOURCE_NOT_ALLOWED: 'the source (or a redirect) is not on the allowlist',
  SOURCE_UNAVAILABLE: 'the source could not be fetched',
  SOURCE_TIMEOUT: 'the source did not answer in time',
  MEDIA_INVALID: 'the fetched content is not a readable image',
  MEDIA_TOO_LARGE: 'the fetched image exceeds the size or pixel limit',
  MEDIA_TYPE_MISMATCH: 'the fetched content is not the image type the source declared',
  TRANSFER_FAILED: 'the source could not be copied',
});
