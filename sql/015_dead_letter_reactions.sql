-- 015: telling the domain that an event was dead-lettered.
--
-- A dead letter used to change outbox_events only. The operation the event carried stayed
-- 'pending' or 'running' and its resource non-final (a sync kept its store's one active slot, a
-- publication stayed 'publishing') until an operator retried the event: clients polled forever.
-- Workers now run the job's dead-letter reaction (@OnOutboxDeadLetter: fail the operation, settle
-- the resource) for every dead letter with dead_letter_handled_at IS NULL, whichever path
-- dead-lettered it (the dispatcher's enqueue attempts, the worker's last attempt, a job stalled too
-- often, the failed-job sweep), and then set it. An operator's retry clears it again.
--
-- Dead letters from before this migration are reacted to as well: their operations are the stuck
-- ones. Adding a nullable column without a default rewrites nothing.
ALTER TABLE outbox_events ADD COLUMN dead_letter_handled_at timestamptz;

CREATE INDEX outbox_events_unhandled_dead_idx ON outbox_events (workspace_id)
  WHERE status = 'dead_letter' AND dead_letter_handled_at IS NULL;

-- Workspace ids only, like outbox_due_workspaces, in id order after p_after (a cursor, so workspaces
-- whose reactions keep failing cannot hide the others): the reactions themselves run bound to each
-- workspace, under row-level security.
CREATE FUNCTION outbox_unhandled_dead_letter_workspaces(p_after uuid, p_limit integer)
  RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT DISTINCT e.workspace_id
      FROM outbox_events e
     WHERE e.status = 'dead_letter' AND e.dead_letter_handled_at IS NULL
       AND (p_after IS NULL OR e.workspace_id > p_after)
     ORDER BY e.workspace_id
     LIMIT least(greatest(p_limit, 1), 10000)
  $$;
REVOKE ALL ON FUNCTION outbox_unhandled_dead_letter_workspaces(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_unhandled_dead_letter_workspaces(uuid, integer) TO outbox_agent;
