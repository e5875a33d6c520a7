-- 002 records kernel: records (head), immutable revisions, feature executions, audit events.
-- Product drafts are records of module 'product_draft'.

-- Membership check for the request guard, callable before any workspace is bound: returns the
-- caller's role in one workspace, or NULL. Narrow on purpose: one user, one workspace, a role.
CREATE FUNCTION app_member_role(p_user_id uuid, p_workspace_id uuid) RETURNS text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$ SELECT m.role FROM workspace_members m WHERE m.user_id = p_user_id AND m.workspace_id = p_workspace_id $$;
REVOKE ALL ON FUNCTION app_member_role(uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_member_role(uuid, uuid) TO app_user;

-- Retention of expired idempotency records across workspaces, in bounded batches. Deletes only
-- rows past expires_at and returns a count, nothing else.
CREATE FUNCTION app_delete_expired_idempotency(p_limit integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH doomed AS (
      SELECT workspace_id, user_id, idempotency_key FROM idempotency_requests
       WHERE expires_at < now()
       ORDER BY expires_at
       LIMIT greatest(1, least(p_limit, 10000))
       FOR UPDATE SKIP LOCKED
    ), deleted AS (
      DELETE FROM idempotency_requests r USING doomed d
       WHERE r.workspace_id = d.workspace_id AND r.user_id = d.user_id
         AND r.idempotency_key = d.idempotency_key
      RETURNING 1
    )
    SELECT count(*)::integer FROM deleted
  $$;
REVOKE ALL ON FUNCTION app_delete_expired_idempotency(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_delete_expired_idempotency(integer) TO app_user;

CREATE TABLE records (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id           uuid NOT NULL,
  module_code  text NOT NULL,
  revision     integer NOT NULL CHECK (revision > 0),
  payload      jsonb NOT NULL,
  created_by   uuid NOT NULL REFERENCES users (id),
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  UNIQUE (workspace_id, module_code, id)
);
CREATE INDEX records_module_idx ON records (workspace_id, module_code, created_at DESC);

-- One immutable snapshot per revision. The composite FK ties the revision to its parent in the
-- same workspace; the snapshot repeats workspaceId/moduleCode/id/revision so a read can verify
-- it against its row and parent and fail closed.
CREATE TABLE record_revisions (
  workspace_id uuid NOT NULL,
  record_id    uuid NOT NULL,
  revision     integer NOT NULL CHECK (revision > 0),
  snapshot     jsonb NOT NULL,
  created_by   uuid NOT NULL REFERENCES users (id),
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, record_id, revision),
  FOREIGN KEY (workspace_id, record_id) REFERENCES records (workspace_id, id) ON DELETE CASCADE
);

CREATE FUNCTION record_revisions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'record_revisions rows are immutable' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER record_revisions_no_update BEFORE UPDATE ON record_revisions
  FOR EACH ROW EXECUTE FUNCTION record_revisions_immutable();
REVOKE UPDATE, DELETE ON record_revisions FROM app_user;

CREATE TABLE feature_executions (
  workspace_id    uuid NOT NULL,
  id              uuid NOT NULL,
  module_code     text NOT NULL,
  record_id       uuid NOT NULL,
  feature_id      text NOT NULL,
  mode            text NOT NULL CHECK (mode IN ('local', 'blocked_external', 'outbox')),
  status          text NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'BLOCKED')),
  base_revision   integer NOT NULL,
  result_revision integer,
  error_code      text,
  created_by      uuid NOT NULL REFERENCES users (id),
  created_at      timestamptz NOT NULL DEFAULT now(),
  completed_at    timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, module_code, record_id)
    REFERENCES records (workspace_id, module_code, id) ON DELETE CASCADE
);
CREATE INDEX feature_executions_record_idx ON feature_executions (workspace_id, record_id, created_at);

-- Who did what to which entity. Ids, codes and revision numbers only: never titles, payloads,
-- credentials or tokens.
CREATE TABLE audit_events (
  workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id            uuid NOT NULL,
  actor_user_id uuid,
  actor         text NOT NULL DEFAULT 'user',
  action        text NOT NULL,
  entity_type   text NOT NULL,
  entity_id     uuid,
  revision      integer,
  metadata      jsonb NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id)
);
CREATE INDEX audit_events_entity_idx ON audit_events (workspace_id, entity_type, entity_id, created_at);
REVOKE UPDATE, DELETE ON audit_events FROM app_user;

ALTER TABLE records ENABLE ROW LEVEL SECURITY;
ALTER TABLE records FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON records
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE record_revisions ENABLE ROW LEVEL SECURITY;
ALTER TABLE record_revisions FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON record_revisions
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE feature_executions ENABLE ROW LEVEL SECURITY;
ALTER TABLE feature_executions FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON feature_executions
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE audit_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_events FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON audit_events
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());
