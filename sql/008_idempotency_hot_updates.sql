-- 008: every idempotency record is inserted (PROCESSING) and then updated exactly once
-- (SUCCEEDED + envelope) in the same transaction. Leave room on each page so that update can be
-- a HOT update (no new index entries: none of the updated columns is indexed).
ALTER TABLE idempotency_requests SET (fillfactor = 70);
