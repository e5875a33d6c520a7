import { defineFailures } from '@listing/outbox';

/**
 * How a media's processing can end (besides the codes every operation shares). The image
 * verdicts carry a message of their own that says what exactly is wrong.
 */
export const MEDIA_FAILURES = defineFailures({
  MEDIA_INVALID: 'the content is not a readable image',
  MEDIA_TOO_LARGE: 'the image exceeds the size or pixel limit',
  MEDIA_TYPE_MISMATCH: 'the content is not the image type that was declared',
  MEDIA_PROCESSING_FAILED: 'the media could not be processed',
});
