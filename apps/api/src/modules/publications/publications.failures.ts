import { defineFailures } from '@listing/outbox';

/** How a publication's operation can end (besides the codes every operation shares). */
export const PUBLICATION_FAILURES = defineFailures({
  PUBLICATION_REJECTED: 'the marketplace refused the product',
  PUBLICATION_FAILED: 'the publication had already failed; publish the draft again',
  PUBLICATION_OUTCOME_UNKNOWN:
    'the marketplace did not confirm the product and may have created it; retry this publication (it cannot create a second product)',
  PUBLICATION_UPDATE_SUPERSEDED:
    'a newer revision of the draft was requested or is already live on the product: this one is never sent',
  PUBLICATION_UPDATE_OUTCOME_UNKNOWN:
    'the marketplace did not confirm the update and may have applied it; request it again (same provider key) or publish a newer revision',
});
