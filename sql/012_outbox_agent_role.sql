-- 012: the outbox's cross-workspace functions belong to the outbox agent, not to the api.
--
-- Until now every process connected as app_user, so the api (the process that faces the
-- internet) could call the dispatcher's discovery, claim and mark, the operators' dead-letter
-- list and retention: ids and metadata of every workspace's events, without a workspace bound.
-- The dispatcher, the worker and the operator CLI now connect as outbox_agent, which
-- `pnpm db:setup` creates (packages/db/src/roles.ts): NOBYPASSRLS, a member of app_user (its table
-- privileges), plus the functions below (and 013's) and the writes on the outbox tables. The api
-- appends events (INSERT) and reads its own workspace's; it keeps outbox_stats() (aggregates only:
-- its backlog metrics) and app_delete_expired_idempotency().
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'outbox_agent') THEN
    RAISE EXCEPTION 'role outbox_agent does not exist: run `pnpm db:setup` (it creates the roles) before migrating';
  END IF;
END
$$;

REVOKE EXECUTE ON FUNCTION outbox_due_workspaces(uuid, integer) FROM app_user;
REVOKE EXECUTE ON FUNCTION outbox_expired_lease_workspaces(integer) FROM app_user;
REVOKE EXECUTE ON FUNCTION outbox_dead_letters(text, uuid, integer) FROM app_user;
REVOKE EXECUTE ON FUNCTION outbox_purge_dispatched(timestamptz, integer) FROM app_user;
REVOKE EXECUTE ON FUNCTION outbox_purge_inbox(timestamptz, integer) FROM app_user;
REVOKE EXECUTE ON FUNCTION outbox_claim_due(uuid, text, integer, integer) FROM app_user;
REVOKE EXECUTE ON FUNCTION outbox_mark_dispatched(text, uuid[]) FROM app_user;

GRANT EXECUTE ON FUNCTION outbox_due_workspaces(uuid, integer) TO outbox_agent;
GRANT EXECUTE ON FUNCTION outbox_expired_lease_workspaces(integer) TO outbox_agent;
GRANT EXECUTE ON FUNCTION outbox_dead_letters(text, uuid, integer) TO outbox_agent;
GRANT EXECUTE ON FUNCTION outbox_purge_dispatched(timestamptz, integer) TO outbox_agent;
GRANT EXECUTE ON FUNCTION outbox_purge_inbox(timestamptz, integer) TO outbox_agent;
GRANT EXECUTE ON FUNCTION outbox_claim_due(uuid, text, integer, integer) TO outbox_agent;
GRANT EXECUTE ON FUNCTION outbox_mark_dispatched(text, uuid[]) TO outbox_agent;

-- Changing an event's state is the agent's too: bound to its own workspace, the api could
-- otherwise still mark its events dispatched, or delete them, with a plain UPDATE or DELETE.
REVOKE UPDATE, DELETE ON outbox_events FROM app_user;
REVOKE INSERT, UPDATE, DELETE ON outbox_inbox FROM app_user;
GRANT UPDATE, DELETE ON outbox_events TO outbox_agent;
GRANT INSERT, UPDATE, DELETE ON outbox_inbox TO outbox_agent;
