-- 010: the lease index must not be usable by the marks.
--
-- outbox_events_lease_idx was partial on `status = 'dispatching'`. The mark (and release and
-- mark-failed) statements say `id = ANY (…) AND status = 'dispatching' AND locked_by = …`, which
-- implies that predicate, so the planner could — and, with statistics taken while few events were
-- in flight or none at all, did — answer them with a bitmap scan of the whole lease index plus a
-- filter on id: every mark read every in-flight event, and every dead index entry a claim left
-- behind since the last vacuum (bitmap scans never mark entries dead). Measured: a 7-id mark
-- with 3,000 events in flight took 1.2 ms, and the cost grew with the run.
--
-- The same rows, indexed under a predicate the marks do not imply: CHECK ((status =
-- 'dispatching') = (locked_until IS NOT NULL)) makes `locked_until IS NOT NULL` equivalent to
-- `status = 'dispatching'`, but the planner does not use CHECK constraints to prove index
-- predicates. The marks are left with the primary key. The reclaim statements filter on
-- `locked_until < now()`, a strict comparison, which implies `locked_until IS NOT NULL`: they keep
-- using this index.
DROP INDEX outbox_events_lease_idx;
CREATE INDEX outbox_events_lease_idx ON outbox_events (locked_until)
  WHERE locked_until IS NOT NULL;
