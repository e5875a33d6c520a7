-- 022: the first batch's reads page as index ranges, like every other list (sql/019).
--
-- GET .../members, .../invitations and .../audit-events list newest first on the key of
-- apps/api/src/common/page-cursor.ts: created_at at millisecond precision written in UTC, then
-- the row's id (a member's user_id). None of these tables had an index on that key, so each page
-- would sort the whole workspace's rows. The pending invitations are the open ones (the partial
-- index's predicate; the expiry is filtered on the range), the audit log is read whole or for one
-- resource (entity_type, entity_id). A draft's revisions need nothing new: they page on
-- record_revisions' primary key (workspace_id, record_id, revision).
-- Built in this transaction (no CONCURRENTLY), like sql/019: it blocks writes to each table
-- while its index builds.
CREATE INDEX workspace_members_page_idx ON workspace_members
  (workspace_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), user_id);
CREATE INDEX workspace_invitations_open_page_idx ON workspace_invitations
  (workspace_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id)
  WHERE accepted_at IS NULL AND declined_at IS NULL;
CREATE INDEX audit_events_page_idx ON audit_events
  (workspace_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);
CREATE INDEX audit_events_resource_page_idx ON audit_events
  (workspace_id, entity_type, entity_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);
