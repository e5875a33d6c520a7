-- 019: every newest-first list is an index range.
--
-- The lists order and compare on created_at at the cursor's millisecond precision, then id
-- (apps/api/src/common/page-cursor.ts). date_trunc on a timestamptz is only STABLE, so no index
-- could serve that key: each page sorted the whole workspace. The same key written in UTC
-- (`created_at AT TIME ZONE 'UTC'`) is IMMUTABLE and indexable, and orders rows identically.
-- Built in this transaction (no CONCURRENTLY), like the earlier migrations: it blocks writes to
-- each table while its index builds.
CREATE INDEX stores_page_idx ON stores
  (workspace_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);
CREATE INDEX publications_page_idx ON publications
  (workspace_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);
CREATE INDEX store_syncs_page_idx ON store_syncs
  (workspace_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);
CREATE INDEX ai_tasks_page_idx ON ai_tasks
  (workspace_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);
CREATE INDEX media_page_idx ON media
  (workspace_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);
CREATE INDEX material_transfers_page_idx ON material_transfers
  (workspace_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);
CREATE INDEX records_page_idx ON records
  (workspace_id, module_code, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);
