-- 013: finding dispatched events whose BullMQ job Redis has lost.
--
-- An event is marked 'dispatched' once BullMQ accepted its job; from then on Redis alone holds the
-- work. A Redis that restarts without persistence, or with the last second of its append-only file
-- missing, or a failover to a replica that had not caught up, loses jobs the outbox already
-- considers delivered. After such a restart the dispatcher walks the recently dispatched events
-- with this function and puts those whose job is gone back to pending (per workspace, under RLS).
--
-- Runs as the owner role. Like outbox_dead_letters it returns metadata only (ids, queue name, the
-- dispatch time in microseconds so the caller can make its update conditional on the exact row
-- version it checked), never a payload; executable by outbox_agent alone (sql/012). Keyset pages in
-- (dispatched_at, id) order over outbox_events_dispatched_idx.
CREATE FUNCTION outbox_dispatched_since(p_since timestamptz, p_after_us bigint, p_after_id uuid, p_limit integer)
  RETURNS TABLE (id uuid, workspace_id uuid, queue text, dispatched_us bigint)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT e.id, e.workspace_id, e.queue, (extract(epoch FROM e.dispatched_at) * 1000000)::bigint
      FROM outbox_events e
     WHERE e.status = 'dispatched'
       -- The index range; the exact keyset condition follows (a double loses the last microsecond).
       AND e.dispatched_at >= greatest(p_since,
             coalesce(to_timestamp(p_after_us / 1000000.0) - interval '1 millisecond', '-infinity'))
       AND (p_after_us IS NULL
            OR (extract(epoch FROM e.dispatched_at) * 1000000)::bigint > p_after_us
            OR ((extract(epoch FROM e.dispatched_at) * 1000000)::bigint = p_after_us AND e.id > p_after_id))
     ORDER BY e.dispatched_at, e.id
     LIMIT least(greatest(p_limit, 1), 10000)
  $$;
REVOKE ALL ON FUNCTION outbox_dispatched_since(timestamptz, bigint, uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_dispatched_since(timestamptz, bigint, uuid, integer) TO outbox_agent;
