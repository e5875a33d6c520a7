-- 007 media: uploaded media (upload → content → complete → worker derives checksum, dimensions,
-- thumbnail) and material transfers (a collected image copied from an allowlisted source URL).
--
-- Bytes live in object storage under deterministic keys; these rows hold the keys and the facts
-- derived from the bytes. Columns written once at a step (created_at, completed_at, ...) are never
-- updated again: an idempotent replay rebuilds the first response from them.

CREATE TABLE media (
  workspace_id     uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id               uuid NOT NULL,
  status           text NOT NULL DEFAULT 'awaiting_content'
                   CHECK (status IN ('awaiting_content', 'uploaded', 'processing', 'ready', 'failed')),
  filename         text NOT NULL CHECK (length(filename) BETWEEN 1 AND 255),
  content_type     text NOT NULL CHECK (content_type IN ('image/png', 'image/jpeg', 'image/webp', 'image/gif')),
  declared_size    bigint NOT NULL CHECK (declared_size > 0),
  original_key     text NOT NULL,
  -- Set by the worker once the bytes validated.
  checksum_sha256  text CHECK (checksum_sha256 ~ '^[0-9a-f]{64}$'),
  width            integer CHECK (width > 0),
  height           integer CHECK (height > 0),
  thumbnail_key    text,
  thumbnail_width  integer,
  thumbnail_height integer,
  error_code       text,
  error_message    text,
  -- The processing operation, set once by complete.
  operation_id     uuid,
  created_by       uuid REFERENCES users (id),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  uploaded_at      timestamptz,
  completed_at     timestamptz,
  processed_at     timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, operation_id) REFERENCES operations (workspace_id, id),
  CHECK ((status = 'failed') = (error_code IS NOT NULL)),
  CHECK (status <> 'ready' OR (checksum_sha256 IS NOT NULL AND width IS NOT NULL AND thumbnail_key IS NOT NULL)),
  CHECK ((status IN ('processing', 'ready', 'failed')) = (operation_id IS NOT NULL))
);
CREATE INDEX media_created_idx ON media (workspace_id, created_at DESC, id DESC);

ALTER TABLE media ENABLE ROW LEVEL SECURITY;
ALTER TABLE media FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON media
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

-- source_url is the URL exactly as sent (it may carry a presigned query string): read only by the
-- worker that fetches it, never put into events, logs or responses. source_key is the
-- normalised URL without signature parameters: the deduplication key and what clients see.
CREATE TABLE material_transfers (
  workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id              uuid NOT NULL,
  status          text NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
  source_url      text NOT NULL,
  source_key      text NOT NULL,
  object_key      text NOT NULL,
  content_type    text,
  size            bigint,
  checksum_sha256 text CHECK (checksum_sha256 ~ '^[0-9a-f]{64}$'),
  width           integer,
  height          integer,
  error_code      text,
  error_message   text,
  operation_id    uuid NOT NULL,
  created_by      uuid REFERENCES users (id),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  completed_at    timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, operation_id) REFERENCES operations (workspace_id, id),
  CHECK ((status = 'failed') = (error_code IS NOT NULL)),
  CHECK (status <> 'succeeded' OR checksum_sha256 IS NOT NULL)
);
-- One transfer per workspace and source: a second request for the same source is a 409 naming
-- the existing transfer.
CREATE UNIQUE INDEX material_transfers_source_key ON material_transfers (workspace_id, source_key);
CREATE INDEX material_transfers_created_idx ON material_transfers (workspace_id, created_at DESC, id DESC);

ALTER TABLE material_transfers ENABLE ROW LEVEL SECURITY;
ALTER TABLE material_transfers FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON material_transfers
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());
