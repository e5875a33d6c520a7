-- 003 outbox: worker inbox and narrow cross-workspace functions for the dispatcher, retention
-- and operators. Operator retries are recorded in audit_events (sql/002).
--
-- Runs as the owner role (listing_owner). Every SECURITY DEFINER function below is owned by the
-- owner (BYPASSRLS), pins search_path, returns ids, counts or redacted metadata only (never a
-- payload), and is executable by app_user alone.

-- ---------------------------------------------------------------------------------------------
-- Inbox: the event ids a handler has already applied. Written in the same transaction as the
-- handler's database effect, so a redelivered event finds its row and the effect happens once.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE outbox_inbox (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  handler      text NOT NULL,
  event_id     uuid NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, handler, event_id)
);
CREATE INDEX outbox_inbox_processed_idx ON outbox_inbox (processed_at);

ALTER TABLE outbox_inbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE outbox_inbox FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON outbox_inbox
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

-- ---------------------------------------------------------------------------------------------
-- Dispatcher discovery. Workspaces with due pending events, in workspace-id order after a cursor
-- (round-robin: the dispatcher passes the last id it served and wraps around). A loose index scan
-- over outbox_events_due_idx: one index probe per workspace with pending events, however large
-- its backlog, and the dispatched history is outside the partial index.
-- ---------------------------------------------------------------------------------------------
CREATE FUNCTION outbox_due_workspaces(p_after uuid, p_limit integer)
  RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH RECURSIVE ws(workspace_id) AS (
      (SELECT e.workspace_id FROM outbox_events e
        WHERE e.status = 'pending'
          AND e.workspace_id > coalesce(p_after, '00000000-0000-0000-0000-000000000000'::uuid)
        ORDER BY e.workspace_id LIMIT 1)
      UNION ALL
      SELECT (SELECT e.workspace_id FROM outbox_events e
               WHERE e.status = 'pending' AND e.workspace_id > ws.workspace_id
               ORDER BY e.workspace_id LIMIT 1)
        FROM ws WHERE ws.workspace_id IS NOT NULL
    )
    SELECT ws.workspace_id FROM ws
     WHERE ws.workspace_id IS NOT NULL
       AND EXISTS (SELECT 1 FROM outbox_events e
                    WHERE e.status = 'pending' AND e.workspace_id = ws.workspace_id
                      AND e.next_attempt_at <= now())
     LIMIT least(greatest(p_limit, 1), 10000)
  $$;
REVOKE ALL ON FUNCTION outbox_due_workspaces(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_due_workspaces(uuid, integer) TO app_user;

-- Workspaces holding expired dispatch leases (a dispatcher died or stalled); ids only. Reads the
-- small outbox_events_lease_idx (in-flight rows only).
CREATE FUNCTION outbox_expired_lease_workspaces(p_limit integer)
  RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT DISTINCT e.workspace_id FROM outbox_events e
     WHERE e.status = 'dispatching' AND e.locked_until < now()
     LIMIT least(greatest(p_limit, 1), 10000)
  $$;
REVOKE ALL ON FUNCTION outbox_expired_lease_workspaces(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_expired_lease_workspaces(integer) TO app_user;

-- ---------------------------------------------------------------------------------------------
-- Operators: statistics (aggregates only) and the dead-letter list (metadata and the already
-- redacted last_error; never the payload). Retrying happens per workspace under RLS.
-- ---------------------------------------------------------------------------------------------
CREATE FUNCTION outbox_stats()
  RETURNS TABLE (queue text, status text, events bigint, oldest_created_at timestamptz,
                 oldest_due_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT e.queue, e.status, count(*), min(e.created_at), min(e.next_attempt_at)
      FROM outbox_events e
     WHERE e.status IN ('pending', 'dispatching', 'dead_letter')
     GROUP BY e.queue, e.status
  $$;
REVOKE ALL ON FUNCTION outbox_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_stats() TO app_user;

CREATE FUNCTION outbox_dead_letters(p_queue text, p_id uuid, p_limit integer)
  RETURNS TABLE (id uuid, workspace_id uuid, queue text, event_type text, attempt_count integer,
                 last_error text, created_at timestamptz, updated_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT e.id, e.workspace_id, e.queue, e.event_type, e.attempt_count, e.last_error,
           e.created_at, e.updated_at
      FROM outbox_events e
     WHERE e.status = 'dead_letter' AND (p_queue IS NULL OR e.queue = p_queue)
       AND (p_id IS NULL OR e.id = p_id)
     ORDER BY e.updated_at, e.id
     LIMIT least(greatest(p_limit, 1), 10000)
  $$;
REVOKE ALL ON FUNCTION outbox_dead_letters(text, uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_dead_letters(text, uuid, integer) TO app_user;

-- ---------------------------------------------------------------------------------------------
-- Retention, in bounded batches (at most 10,000 rows a call). Each returns the rows deleted.
-- ---------------------------------------------------------------------------------------------
CREATE FUNCTION outbox_purge_dispatched(p_before timestamptz, p_limit integer)
  RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH doomed AS (
      SELECT e.id FROM outbox_events e
       WHERE e.status = 'dispatched' AND e.dispatched_at < least(p_before, now())
       ORDER BY e.dispatched_at
       LIMIT least(greatest(p_limit, 1), 10000)
       FOR UPDATE SKIP LOCKED
    ), gone AS (
      DELETE FROM outbox_events e USING doomed d WHERE e.id = d.id RETURNING 1
    )
    SELECT count(*)::integer FROM gone
  $$;
REVOKE ALL ON FUNCTION outbox_purge_dispatched(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_purge_dispatched(timestamptz, integer) TO app_user;

CREATE FUNCTION outbox_purge_inbox(p_before timestamptz, p_limit integer)
  RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH doomed AS (
      SELECT i.workspace_id, i.handler, i.event_id FROM outbox_inbox i
       WHERE i.processed_at < least(p_before, now())
       ORDER BY i.processed_at
       LIMIT least(greatest(p_limit, 1), 10000)
       FOR UPDATE SKIP LOCKED
    ), gone AS (
      DELETE FROM outbox_inbox i USING doomed d
       WHERE i.workspace_id = d.workspace_id AND i.handler = d.handler AND i.event_id = d.event_id
      RETURNING 1
    )
    SELECT count(*)::integer FROM gone
  $$;
REVOKE ALL ON FUNCTION outbox_purge_inbox(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_purge_inbox(timestamptz, integer) TO app_user;

-- Expired idempotency records are purged by app_delete_expired_idempotency (sql/002).
