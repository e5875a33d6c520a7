-- 027: the SECURITY DEFINER functions on a per-request, per-row or per-round path become plpgsql.
--
-- PostgreSQL 15 never inlines a SQL-language function that is SECURITY DEFINER or has a SET
-- clause, and runs such a function by parsing and planning its body again on every call: 0.2 ms
-- of planning for app_authenticate, which every authenticated request calls once (pgbench, one
-- client: 0.25 ms per call against 0.12 ms as plpgsql). plpgsql keeps each statement's plan for
-- the session. Bodies, results, volatility, privileges and search_path are unchanged: a scalar
-- SELECT keeps its first row (LIMIT 1, as a SQL function returned it), a set is RETURN QUERY, and
-- `#variable_conflict use_column` keeps every name in a query a column, as it was. Maintenance
-- functions (purges, stats, dead-letter listings) stay SQL: they run rarely and plan once per call.

CREATE OR REPLACE FUNCTION app_token_user(p_token_hash bytea) RETURNS uuid
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN (SELECT t.user_id FROM auth_access_tokens t JOIN auth_sessions s ON s.id = t.session_id
             WHERE t.token_hash = p_token_hash AND t.expires_at > now()
               AND s.revoked_at IS NULL AND s.expires_at > now()
             LIMIT 1);
  END
  $$;

CREATE OR REPLACE FUNCTION app_authenticate(p_token_hash bytea, p_workspace uuid)
  RETURNS TABLE (user_id uuid, session_id uuid, role text, first_use boolean)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT t.user_id, t.session_id, m.role, t.used_at IS NULL
      FROM auth_access_tokens t
      JOIN auth_sessions s ON s.id = t.session_id
      LEFT JOIN workspace_members m ON m.user_id = t.user_id AND m.workspace_id = p_workspace
     WHERE t.token_hash = p_token_hash AND t.expires_at > now()
       AND s.revoked_at IS NULL AND s.expires_at > now();
  END
  $$;

CREATE OR REPLACE FUNCTION app_mark_access_token_used(p_token_hash bytea) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    UPDATE auth_access_tokens SET used_at = now() WHERE token_hash = p_token_hash AND used_at IS NULL;
  END
  $$;

CREATE OR REPLACE FUNCTION app_login_lookup(p_email text)
  RETURNS TABLE (id uuid, email text, password_hash text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY SELECT u.id, u.email, u.password_hash FROM users u WHERE lower(u.email) = lower(p_email);
  END
  $$;

CREATE OR REPLACE FUNCTION app_insert_session(p_id uuid, p_user_id uuid, p_ttl_seconds integer) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    INSERT INTO auth_sessions (id, user_id, expires_at)
    VALUES (p_id, p_user_id, now() + make_interval(secs => p_ttl_seconds));
  END
  $$;

CREATE OR REPLACE FUNCTION app_insert_refresh_token(p_session_id uuid, p_token_hash bytea) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    INSERT INTO auth_refresh_tokens (token_hash, session_id) VALUES (p_token_hash, p_session_id);
  END
  $$;

CREATE OR REPLACE FUNCTION app_insert_access_token(p_token_hash bytea, p_session_id uuid, p_ttl_seconds integer)
  RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    INSERT INTO auth_access_tokens (token_hash, session_id, user_id, expires_at)
    SELECT p_token_hash, s.id, s.user_id, now() + make_interval(secs => p_ttl_seconds)
      FROM auth_sessions s WHERE s.id = p_session_id;
  END
  $$;

CREATE OR REPLACE FUNCTION app_find_refresh_token(p_token_hash bytea)
  RETURNS TABLE (session_id uuid, used_seconds_ago double precision)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT t.session_id, extract(epoch FROM now() - t.used_at)::float8
      FROM auth_refresh_tokens t WHERE t.token_hash = p_token_hash;
  END
  $$;

CREATE OR REPLACE FUNCTION app_use_refresh_token(p_token_hash bytea)
  RETURNS TABLE (session_id uuid, user_id uuid)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    WITH used AS (
      UPDATE auth_refresh_tokens t SET used_at = now()
        FROM auth_sessions s
       WHERE t.token_hash = p_token_hash AND t.used_at IS NULL
         AND s.id = t.session_id AND s.revoked_at IS NULL AND s.expires_at > now()
      RETURNING t.session_id, s.user_id
    )
    SELECT used.session_id, used.user_id FROM used;
  END
  $$;

CREATE OR REPLACE FUNCTION app_revoke_session(p_session_id uuid) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    UPDATE auth_sessions SET revoked_at = now() WHERE id = p_session_id AND revoked_at IS NULL;
    DELETE FROM auth_access_tokens WHERE session_id = p_session_id;
  END
  $$;

CREATE OR REPLACE FUNCTION app_user_workspaces(p_token_hash bytea)
  RETURNS TABLE (workspace_id uuid, name text, role text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT m.workspace_id, w.name, m.role FROM workspace_members m
      JOIN workspaces w ON w.id = m.workspace_id
     WHERE m.user_id = app_token_user(p_token_hash) ORDER BY m.created_at;
  END
  $$;

CREATE OR REPLACE FUNCTION app_member_email(p_user_id uuid) RETURNS text
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN (SELECT u.email FROM users u
              JOIN workspace_members m ON m.user_id = u.id AND m.workspace_id = app_current_workspace()
             WHERE u.id = p_user_id
             LIMIT 1);
  END
  $$;

CREATE OR REPLACE FUNCTION app_member_role_by_email(p_email text) RETURNS text
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN (SELECT m.role FROM users u
              JOIN workspace_members m ON m.user_id = u.id AND m.workspace_id = app_current_workspace()
             WHERE lower(u.email) = lower(p_email)
             LIMIT 1);
  END
  $$;

CREATE OR REPLACE FUNCTION app_user_invitations(p_token_hash bytea)
  RETURNS TABLE (id uuid, workspace_id uuid, workspace_name text, role text,
                 created_at timestamptz, expires_at timestamptz)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT i.id, i.workspace_id, w.name, i.role, i.created_at, i.expires_at
      FROM users u
      JOIN workspace_invitations i ON i.email = lower(u.email)
      JOIN workspaces w ON w.id = i.workspace_id
     WHERE u.id = app_token_user(p_token_hash) AND i.accepted_at IS NULL AND i.declined_at IS NULL
       AND i.expires_at > now() AND i.sent_at > u.created_at
     ORDER BY i.created_at, i.id;
  END
  $$;

CREATE OR REPLACE FUNCTION app_user_invitation(p_token_hash bytea, p_id uuid)
  RETURNS TABLE (id uuid, workspace_id uuid, workspace_name text, role text,
                 created_at timestamptz, expires_at timestamptz,
                 accepted_at timestamptz, declined_at timestamptz)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT i.id, i.workspace_id, w.name, i.role, i.created_at, i.expires_at, i.accepted_at, i.declined_at
      FROM users u
      JOIN workspace_invitations i ON i.email = lower(u.email)
      JOIN workspaces w ON w.id = i.workspace_id
     WHERE u.id = app_token_user(p_token_hash) AND i.id = p_id AND i.sent_at > u.created_at;
  END
  $$;

-- The dispatcher's discovery, several times a second per dispatcher.
CREATE OR REPLACE FUNCTION outbox_due_workspaces(p_after uuid, p_limit integer) RETURNS SETOF uuid
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
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
     LIMIT least(greatest(p_limit, 1), 10000);
  END
  $$;

CREATE OR REPLACE FUNCTION outbox_expired_lease_workspaces(p_limit integer) RETURNS SETOF uuid
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT DISTINCT e.workspace_id FROM outbox_events e
     WHERE e.status = 'dispatching' AND e.locked_until < now()
     LIMIT least(greatest(p_limit, 1), 10000);
  END
  $$;
