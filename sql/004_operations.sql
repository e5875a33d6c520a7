-- 004 operations: the user-visible status of asynchronous work (202 + operation pattern).
-- A command writes its resource, an operation (pending) and an outbox event in one transaction;
-- the worker moves the operation pending → running → succeeded | failed with conditional updates.

CREATE TABLE operations (
  workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id            uuid NOT NULL,
  kind          text NOT NULL,
  status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
  resource_type text NOT NULL,
  resource_id   uuid NOT NULL,
  -- A safe, stable error for clients: a code and a message written for them, never provider text.
  error_code    text,
  error_message text,
  attempts      integer NOT NULL DEFAULT 0,
  created_by    uuid REFERENCES users (id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  started_at    timestamptz,
  completed_at  timestamptz,
  PRIMARY KEY (workspace_id, id),
  CHECK ((status = 'failed') = (error_code IS NOT NULL))
);
CREATE INDEX operations_resource_idx ON operations (workspace_id, resource_type, resource_id, created_at);
CREATE INDEX operations_created_idx ON operations (workspace_id, created_at DESC, id DESC);
-- Operations not finished, for the soak's "nothing stuck" check and for operators.
CREATE INDEX operations_open_idx ON operations (updated_at) WHERE status IN ('pending', 'running');

ALTER TABLE operations ENABLE ROW LEVEL SECURITY;
ALTER TABLE operations FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON operations
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());
