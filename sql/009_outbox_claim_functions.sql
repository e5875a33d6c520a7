-- 009: the dispatcher's two hot statements as plpgsql functions, so each costs one round trip.
--
-- The dispatcher sends `SELECT set_config('app.workspace_id', …, true), …; SELECT * FROM
-- outbox_claim_due(…)` as one simple-protocol message: PostgreSQL runs both statements in one
-- implicit transaction, so the workspace binding, the claim and the commit travel together
-- instead of BEGIN, claim and COMMIT each waiting for the last. plpgsql keeps the plans per
-- connection (what the named prepared statements did before).
--
-- `enable_seqscan = off`: plpgsql caches a generic plan after a few calls, planned with the
-- table's statistics of that moment. On a fresh (or freshly truncated) table that plan is a
-- sequential scan, which then stays while the table grows by thousands of rows a second: the
-- claim must read outbox_events_due_idx and the mark the primary key, whatever the statistics.
--
-- SECURITY INVOKER (the default), on purpose: row-level security applies inside, so without a
-- bound workspace they see, claim and mark nothing, exactly as the plain statements did.

CREATE FUNCTION outbox_claim_due(p_workspace uuid, p_locked_by text, p_limit integer, p_lease_ms integer)
  RETURNS SETOF outbox_events
  LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public SET enable_seqscan = off
  AS $$
  BEGIN
    RETURN QUERY
      UPDATE outbox_events e
         SET status = 'dispatching', locked_by = p_locked_by,
             locked_until = now() + p_lease_ms * interval '1 millisecond', updated_at = now()
        FROM (SELECT c.id FROM outbox_events c
               WHERE c.workspace_id = p_workspace AND c.status = 'pending' AND c.next_attempt_at <= now()
               ORDER BY c.next_attempt_at
               LIMIT p_limit
               FOR UPDATE SKIP LOCKED) due
       WHERE e.id = due.id
      RETURNING e.*;
  END
  $$;
REVOKE ALL ON FUNCTION outbox_claim_due(uuid, text, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_claim_due(uuid, text, integer, integer) TO app_user;

-- Marks events dispatched, only those whose lease p_locked_by still holds. Returns the count.
CREATE FUNCTION outbox_mark_dispatched(p_locked_by text, p_ids uuid[])
  RETURNS integer
  LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public SET enable_seqscan = off
  AS $$
  DECLARE
    marked integer;
  BEGIN
    UPDATE outbox_events
       SET status = 'dispatched', dispatched_at = now(), locked_by = NULL, locked_until = NULL,
           last_error = NULL, updated_at = now()
     WHERE id = ANY (p_ids) AND status = 'dispatching' AND locked_by = p_locked_by;
    GET DIAGNOSTICS marked = ROW_COUNT;
    RETURN marked;
  END
  $$;
REVOKE ALL ON FUNCTION outbox_mark_dispatched(text, uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_mark_dispatched(text, uuid[]) TO app_user;
