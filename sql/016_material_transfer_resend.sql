-- 016: a failed material transfer no longer blocks its source forever.
--
-- 007 made (workspace, source_key) unique over every transfer, so after a failure (the source was
-- unreachable, not an image, or the outbox gave up on the job) each new request for that source got
-- 409 MATERIAL_TRANSFER_EXISTS naming the failed transfer: the source could never be copied. Like
-- publications (sql/006), only transfers that did not fail hold the source now; a new request after
-- a failure is a new transfer with its own object key.
DROP INDEX material_transfers_source_key;
CREATE UNIQUE INDEX material_transfers_source_key ON material_transfers (workspace_id, source_key)
  WHERE status <> 'failed';
