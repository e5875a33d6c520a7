-- 001 foundation: tenancy, authentication, idempotency records and the transactional outbox.
--
-- Runs as the owner role (listing_owner). The application connects as app_user, which owns
-- nothing, has no BYPASSRLS and only gets DML through the grants below.

-- Every table created by the owner from here on is usable (DML only) by the application role.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO app_user;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO app_user;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- The workspace of the current transaction, or NULL. set_config(..., true) is transaction-local,
-- so a pooled connection never carries one workspace into the next transaction; after such a
-- transaction the setting reads '' (not NULL), hence the NULLIF.
CREATE FUNCTION app_current_workspace() RETURNS uuid
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT NULLIF(current_setting('app.workspace_id', true), '')::uuid $$;

-- ---------------------------------------------------------------------------------------------
-- Identity (global, not tenant-scoped)
-- ---------------------------------------------------------------------------------------------
CREATE TABLE users (
  id            uuid PRIMARY KEY,
  email         text NOT NULL,
  password_hash text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

-- One row per login. Refresh tokens rotate within the session: each use marks the presented
-- token used and issues the next; presenting a used token again (a stolen copy) revokes the whole
-- session. Only SHA-256 hashes of the opaque tokens are stored.
CREATE TABLE auth_sessions (
  id         uuid PRIMARY KEY,
  user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX auth_sessions_user_idx ON auth_sessions (user_id);

CREATE TABLE auth_refresh_tokens (
  token_hash bytea PRIMARY KEY,
  session_id uuid NOT NULL REFERENCES auth_sessions (id) ON DELETE CASCADE,
  used_at    timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX auth_refresh_tokens_session_idx ON auth_refresh_tokens (session_id);

CREATE TABLE auth_access_tokens (
  token_hash bytea PRIMARY KEY,
  session_id uuid NOT NULL REFERENCES auth_sessions (id) ON DELETE CASCADE,
  user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX auth_access_tokens_session_idx ON auth_access_tokens (session_id);
CREATE INDEX auth_access_tokens_expiry_idx ON auth_access_tokens (expires_at);

-- ---------------------------------------------------------------------------------------------
-- Tenancy
-- ---------------------------------------------------------------------------------------------
CREATE TABLE workspaces (
  id         uuid PRIMARY KEY,
  name       text NOT NULL,
  created_by uuid NOT NULL REFERENCES users (id),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workspace_members (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role         text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user_idx ON workspace_members (user_id);

-- The workspaces a user belongs to, across tenants, for the membership list. Returns id, name
-- and role only; SECURITY DEFINER so it can see past RLS, search_path pinned against hijacking.
CREATE FUNCTION app_user_workspaces(p_user_id uuid)
  RETURNS TABLE (workspace_id uuid, name text, role text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT m.workspace_id, w.name, m.role FROM workspace_members m
      JOIN workspaces w ON w.id = m.workspace_id
     WHERE m.user_id = p_user_id ORDER BY m.created_at
  $$;
REVOKE ALL ON FUNCTION app_user_workspaces(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_user_workspaces(uuid) TO app_user;

-- ---------------------------------------------------------------------------------------------
-- Idempotency records. Unique boundary: (workspace, user, key). operation and fingerprint are
-- the scope checks of an occupied key, not part of the key. response_envelope holds references
-- only ({ schemaVersion, policy, result }), never bodies, titles, credentials or tokens.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE idempotency_requests (
  workspace_id        uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  user_id             uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  idempotency_key     uuid NOT NULL,
  operation           text NOT NULL,
  fingerprint         bytea NOT NULL,
  fingerprint_key_id  text NOT NULL,
  status              text NOT NULL CHECK (status IN ('PROCESSING', 'SUCCEEDED')),
  response_status     integer,
  response_envelope   jsonb,
  created_at          timestamptz NOT NULL DEFAULT now(),
  completed_at        timestamptz,
  expires_at          timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, user_id, idempotency_key),
  CHECK (expires_at >= created_at + interval '24 hours'),
  CHECK (status <> 'SUCCEEDED' OR (response_status IS NOT NULL AND response_envelope IS NOT NULL))
);
CREATE INDEX idempotency_requests_expiry_idx ON idempotency_requests (expires_at);

-- ---------------------------------------------------------------------------------------------
-- Transactional outbox. id is the BullMQ jobId. Payloads carry ids, versions or immutable
-- snapshots only.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE outbox_events (
  id              uuid PRIMARY KEY,
  workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  queue           text NOT NULL,
  event_type      text NOT NULL,
  payload         jsonb NOT NULL,
  status          text NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'dispatching', 'dispatched', 'dead_letter')),
  attempt_count   integer NOT NULL DEFAULT 0,
  max_attempts    integer NOT NULL DEFAULT 10 CHECK (max_attempts > 0),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  locked_by       text,
  locked_until    timestamptz,
  last_error      text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  dispatched_at   timestamptz,
  CHECK ((status = 'dispatching') = (locked_until IS NOT NULL))
);
-- Due pending events per workspace: the claim query and the due-workspace discovery. Partial, so
-- a table full of dispatched history costs the claim nothing.
CREATE INDEX outbox_events_due_idx ON outbox_events (workspace_id, next_attempt_at)
  WHERE status = 'pending';
-- Expired leases to reclaim.
CREATE INDEX outbox_events_lease_idx ON outbox_events (locked_until)
  WHERE status = 'dispatching';
-- Retention of dispatched history.
CREATE INDEX outbox_events_dispatched_idx ON outbox_events (dispatched_at)
  WHERE status = 'dispatched';
CREATE INDEX outbox_events_dead_idx ON outbox_events (queue, updated_at)
  WHERE status = 'dead_letter';

-- ---------------------------------------------------------------------------------------------
-- Row-level security: ENABLED and FORCED on every tenant table. Without app.workspace_id a
-- tenant table reads as empty and rejects writes.
-- ---------------------------------------------------------------------------------------------
ALTER TABLE workspaces ENABLE ROW LEVEL SECURITY;
ALTER TABLE workspaces FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON workspaces
  USING (id = app_current_workspace()) WITH CHECK (id = app_current_workspace());

ALTER TABLE workspace_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE workspace_members FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON workspace_members
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE idempotency_requests ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_requests FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON idempotency_requests
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE outbox_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE outbox_events FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON outbox_events
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());
