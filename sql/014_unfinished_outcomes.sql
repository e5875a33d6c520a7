-- 014: states for work whose end the platform did not tell us.
--
-- publications.outcome_unknown: the last attempt to create the product ended without an answer
-- (timeout, dropped response) or after an earlier attempt may already have reached the
-- marketplace. The product may exist. Unlike 'failed' it keeps the (store, draft) slot of the
-- partial unique index, so a new publication cannot create a second product; the client retries
-- this publication instead (POST .../publications/{id}/retry), which sends the same provider
-- idempotency key again.
--
-- stores.verification_failed: the verification of the current credential version ended without a
-- verdict (the marketplace kept failing, or the stored credentials could not be read). Before, the
-- store stayed 'pending_verification' with nothing left to move it. Replacing the credentials
-- verifies again, as from any other state.
--
-- Widening a CHECK: every existing row satisfies the new one; the scan under the migration's lock
-- is one pass over each table.
ALTER TABLE publications DROP CONSTRAINT publications_status_check;
ALTER TABLE publications ADD CONSTRAINT publications_status_check
  CHECK (status IN ('pending', 'publishing', 'published', 'failed', 'outcome_unknown'));

ALTER TABLE stores DROP CONSTRAINT stores_status_check;
ALTER TABLE stores ADD CONSTRAINT stores_status_check
  CHECK (status IN ('pending_verification', 'active', 'invalid_credentials', 'verification_failed'));
