-- 024: what app_user can reach without a workspace.
--
-- app_user could call app_user_workspaces(<any user id>) and read other people's workspace names,
-- and it read users and auth_* directly: one SQL injection anywhere would reach across tenants
-- and into every account. Now:
-- 1. The account tables (users, auth_sessions, auth_access_tokens, auth_refresh_tokens) are no
--    longer app_user's: it reaches them only through the narrow SECURITY DEFINER functions
--    below, one per step of the auth flows, none of which lists rows.
-- 2. The functions that answer for "the caller" take the caller's access token hash, not a user
--    id: only a live token names its user, and a user id alone opens nothing.
-- 3. What other modules need of accounts is scoped to the bound workspace (app_current_workspace):
--    the emails of its members, and whether an email belongs to one of them.

-- The user a live access token (of a live session) belongs to; NULL for any other value.
CREATE FUNCTION app_token_user(p_token_hash bytea) RETURNS uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT t.user_id FROM auth_access_tokens t JOIN auth_sessions s ON s.id = t.session_id
     WHERE t.token_hash = p_token_hash AND t.expires_at > now()
       AND s.revoked_at IS NULL AND s.expires_at > now()
  $$;
REVOKE ALL ON FUNCTION app_token_user(bytea) FROM PUBLIC;

-- The request's authentication: the token, its session and the caller's role in p_workspace.
CREATE FUNCTION app_authenticate(p_token_hash bytea, p_workspace uuid)
  RETURNS TABLE (user_id uuid, session_id uuid, role text, first_use boolean)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT t.user_id, t.session_id, m.role, t.used_at IS NULL
      FROM auth_access_tokens t
      JOIN auth_sessions s ON s.id = t.session_id
      LEFT JOIN workspace_members m ON m.user_id = t.user_id AND m.workspace_id = p_workspace
     WHERE t.token_hash = p_token_hash AND t.expires_at > now()
       AND s.revoked_at IS NULL AND s.expires_at > now()
  $$;

CREATE FUNCTION app_mark_access_token_used(p_token_hash bytea) RETURNS void
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    UPDATE auth_access_tokens SET used_at = now() WHERE token_hash = p_token_hash AND used_at IS NULL
  $$;

CREATE FUNCTION app_insert_user(p_id uuid, p_email text, p_password_hash text) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  BEGIN
    INSERT INTO users (id, email, password_hash) VALUES (p_id, p_email, p_password_hash)
      ON CONFLICT DO NOTHING;
    RETURN FOUND;
  END
  $$;

-- Login: the one account with this email, with its hash for the password check (in the API).
CREATE FUNCTION app_login_lookup(p_email text)
  RETURNS TABLE (id uuid, email text, password_hash text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT u.id, u.email, u.password_hash FROM users u WHERE lower(u.email) = lower(p_email)
  $$;

CREATE FUNCTION app_insert_session(p_id uuid, p_user_id uuid, p_ttl_seconds integer) RETURNS void
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    INSERT INTO auth_sessions (id, user_id, expires_at)
    VALUES (p_id, p_user_id, now() + make_interval(secs => p_ttl_seconds))
  $$;

CREATE FUNCTION app_insert_refresh_token(p_session_id uuid, p_token_hash bytea) RETURNS void
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    INSERT INTO auth_refresh_tokens (token_hash, session_id) VALUES (p_token_hash, p_session_id)
  $$;

-- An access token of one of the session's own user: the session names the user, not the caller.
CREATE FUNCTION app_insert_access_token(p_token_hash bytea, p_session_id uuid, p_ttl_seconds integer)
  RETURNS void
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    INSERT INTO auth_access_tokens (token_hash, session_id, user_id, expires_at)
    SELECT p_token_hash, s.id, s.user_id, now() + make_interval(secs => p_ttl_seconds)
      FROM auth_sessions s WHERE s.id = p_session_id
  $$;

CREATE FUNCTION app_use_refresh_token(p_token_hash bytea)
  RETURNS TABLE (session_id uuid, user_id uuid)
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    UPDATE auth_refresh_tokens t SET used_at = now()
      FROM auth_sessions s
     WHERE t.token_hash = p_token_hash AND t.used_at IS NULL
       AND s.id = t.session_id AND s.revoked_at IS NULL AND s.expires_at > now()
    RETURNING t.session_id, s.user_id
  $$;

CREATE FUNCTION app_find_refresh_token(p_token_hash bytea)
  RETURNS TABLE (session_id uuid, used_seconds_ago double precision)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT t.session_id, extract(epoch FROM now() - t.used_at)::float8
      FROM auth_refresh_tokens t WHERE t.token_hash = p_token_hash
  $$;

-- Whether the pair a rotation issued is untouched; locks the refresh row (see auth.repository.ts).
CREATE FUNCTION app_successor_unused(p_session_id uuid, p_refresh_hash bytea, p_access_hash bytea)
  RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  BEGIN
    PERFORM 1
       FROM auth_refresh_tokens r
       JOIN auth_access_tokens a ON a.token_hash = p_access_hash AND a.session_id = r.session_id
       JOIN auth_sessions s ON s.id = r.session_id
      WHERE r.token_hash = p_refresh_hash AND r.session_id = p_session_id AND r.used_at IS NULL
        AND a.used_at IS NULL AND a.expires_at > now()
        AND s.revoked_at IS NULL AND s.expires_at > now()
        FOR UPDATE OF r;
    RETURN FOUND;
  END
  $$;

CREATE FUNCTION app_revoke_session(p_session_id uuid) RETURNS void
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    UPDATE auth_sessions SET revoked_at = now() WHERE id = p_session_id AND revoked_at IS NULL;
    DELETE FROM auth_access_tokens WHERE session_id = p_session_id;
  $$;

-- The caller's workspaces and invitations: the caller is whoever the live token belongs to.
DROP FUNCTION app_user_workspaces(uuid);
CREATE FUNCTION app_user_workspaces(p_token_hash bytea) RETURNS TABLE (workspace_id uuid, name text, role text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT m.workspace_id, w.name, m.role FROM workspace_members m
      JOIN workspaces w ON w.id = m.workspace_id
     WHERE m.user_id = app_token_user(p_token_hash) ORDER BY m.created_at
  $$;

DROP FUNCTION app_user_invitations(uuid);
CREATE FUNCTION app_user_invitations(p_token_hash bytea)
  RETURNS TABLE (id uuid, workspace_id uuid, workspace_name text, role text, created_at timestamptz,
                 expires_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT i.id, i.workspace_id, w.name, i.role, i.created_at, i.expires_at
      FROM users u
      JOIN workspace_invitations i ON i.email = lower(u.email)
      JOIN workspaces w ON w.id = i.workspace_id
     WHERE u.id = app_token_user(p_token_hash) AND i.accepted_at IS NULL AND i.declined_at IS NULL
       AND i.expires_at > now() AND i.sent_at > u.created_at
     ORDER BY i.created_at, i.id
  $$;

DROP FUNCTION app_user_invitation(uuid, uuid);
CREATE FUNCTION app_user_invitation(p_token_hash bytea, p_id uuid)
  RETURNS TABLE (id uuid, workspace_id uuid, workspace_name text, role text, created_at timestamptz,
                 expires_at timestamptz, accepted_at timestamptz, declined_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT i.id, i.workspace_id, w.name, i.role, i.created_at, i.expires_at, i.accepted_at, i.declined_at
      FROM users u
      JOIN workspace_invitations i ON i.email = lower(u.email)
      JOIN workspaces w ON w.id = i.workspace_id
     WHERE u.id = app_token_user(p_token_hash) AND i.id = p_id AND i.sent_at > u.created_at
  $$;

-- Of the bound workspace only: a member's email, and the role of the member with an email.
CREATE FUNCTION app_member_email(p_user_id uuid) RETURNS text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT u.email FROM users u
      JOIN workspace_members m ON m.user_id = u.id AND m.workspace_id = app_current_workspace()
     WHERE u.id = p_user_id
  $$;

CREATE FUNCTION app_member_role_by_email(p_email text) RETURNS text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT m.role FROM users u
      JOIN workspace_members m ON m.user_id = u.id AND m.workspace_id = app_current_workspace()
     WHERE lower(u.email) = lower(p_email)
  $$;

DO $$
DECLARE
  f text;
BEGIN
  FOREACH f IN ARRAY ARRAY[
    'app_authenticate(bytea, uuid)', 'app_mark_access_token_used(bytea)',
    'app_insert_user(uuid, text, text)', 'app_login_lookup(text)',
    'app_insert_session(uuid, uuid, integer)', 'app_insert_refresh_token(uuid, bytea)',
    'app_insert_access_token(bytea, uuid, integer)', 'app_use_refresh_token(bytea)',
    'app_find_refresh_token(bytea)', 'app_successor_unused(uuid, bytea, bytea)',
    'app_revoke_session(uuid)', 'app_user_workspaces(bytea)', 'app_user_invitations(bytea)',
    'app_user_invitation(bytea, uuid)', 'app_member_email(uuid)', 'app_member_role_by_email(text)'
  ] LOOP
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO app_user', f);
  END LOOP;
END
$$;

REVOKE ALL ON users, auth_sessions, auth_access_tokens, auth_refresh_tokens FROM app_user;
-- The role of any user in any workspace, by id: app_authenticate answers it for the caller now.
REVOKE ALL ON FUNCTION app_member_role(uuid, uuid) FROM app_user;
