-- 017: least privilege for the outbox agent, and SECURITY DEFINER functions that temp tables
-- cannot fool.
--
-- 1. outbox_agent (dispatcher, worker, operator CLI) was a member of app_user and so could read
--    password hashes and insert access tokens: a compromised worker, the process that fetches
--    remote URLs, could take over accounts. It is no longer a member (`pnpm db:setup` revokes
--    the membership, packages/db/src/roles.ts). It gets app_user's privileges on every table,
--    sequence and function here, except the account tables and the account functions; later
--    tables reach it through the default privileges below, so a new account table must revoke
--    them from outbox_agent as this migration does.
-- 2. SET search_path = pg_catalog, public leaves pg_temp searched first for tables: a session
--    could shadow workspace_members with a temp table and make app_member_role() answer
--    'owner'. pg_temp goes last on every SECURITY DEFINER function.
DO $$
DECLARE
  g record;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'outbox_agent') THEN
    RAISE EXCEPTION 'role outbox_agent does not exist: run `pnpm db:setup` (it creates the roles) before migrating';
  END IF;

  FOR g IN
    SELECT c.oid::regclass AS rel, c.relkind, a.privilege_type
      FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
     WHERE c.relnamespace = 'public'::regnamespace
       AND c.relkind IN ('r', 'p', 'v', 'S')
       AND a.grantee = 'app_user'::regrole
       AND c.relname NOT IN ('users', 'auth_sessions', 'auth_access_tokens', 'auth_refresh_tokens',
                             'workspace_members')
  LOOP
    EXECUTE format('GRANT %s ON %s %s TO outbox_agent', g.privilege_type,
                   CASE WHEN g.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, g.rel);
  END LOOP;

  FOR g IN
    SELECT p.oid::regprocedure AS fn
      FROM pg_proc p CROSS JOIN LATERAL aclexplode(p.proacl) a
     WHERE p.pronamespace = 'public'::regnamespace
       AND a.grantee = 'app_user'::regrole AND a.privilege_type = 'EXECUTE'
       AND p.proname NOT IN ('app_user_workspaces', 'app_member_role')
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO outbox_agent', g.fn);
  END LOOP;

  FOR g IN
    SELECT p.oid::regprocedure AS fn FROM pg_proc p
     WHERE p.pronamespace = 'public'::regnamespace AND p.prosecdef
  LOOP
    EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, public, pg_temp', g.fn);
  END LOOP;
END
$$;

REVOKE ALL ON users, auth_sessions, auth_access_tokens, auth_refresh_tokens, workspace_members
  FROM outbox_agent;

ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO outbox_agent;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO outbox_agent;
