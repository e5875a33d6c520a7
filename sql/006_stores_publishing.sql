-- 006 stores, credentials, first publications, store syncs with their synced products, AI tasks.
-- Every command writes its row here, an operation (004) and an outbox event in one transaction;
-- workers move the rows with conditional updates (`where status in (...)`), so a redelivered job
-- can neither move a row backwards nor finish it twice.

-- ---------------------------------------------------------------------------------------------
-- Stores: one marketplace store per (workspace, platform, external id). credential_version names
-- the current row of store_credentials; a verification job carries the version it verifies, so a
-- job for replaced credentials changes nothing.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE stores (
  workspace_id        uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id                  uuid NOT NULL,
  platform            text NOT NULL CHECK (platform IN ('sim')),
  store_external_id   text NOT NULL CHECK (length(store_external_id) BETWEEN 1 AND 128),
  status              text NOT NULL DEFAULT 'pending_verification'
                      CHECK (status IN ('pending_verification', 'active', 'invalid_credentials')),
  credential_version  integer NOT NULL DEFAULT 1 CHECK (credential_version > 0),
  shop_name           text,
  verified_at         timestamptz,
  created_by          uuid REFERENCES users (id),
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  UNIQUE (workspace_id, platform, store_external_id)
);
CREATE INDEX stores_created_idx ON stores (workspace_id, created_at DESC, id DESC);

-- Encrypted credentials, one immutable row per version: AES-256-GCM under key_id, with
-- (workspace, store, version) as additional authenticated data so a row cannot be replayed
-- under another store. Never selected by anything that builds a response.
CREATE TABLE store_credentials (
  workspace_id uuid NOT NULL,
  store_id     uuid NOT NULL,
  version      integer NOT NULL CHECK (version > 0),
  key_id       text NOT NULL,
  iv           bytea NOT NULL CHECK (length(iv) = 12),
  ciphertext   bytea NOT NULL,
  auth_tag     bytea NOT NULL CHECK (length(auth_tag) = 16),
  created_by   uuid REFERENCES users (id),
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, store_id, version),
  FOREIGN KEY (workspace_id, store_id) REFERENCES stores (workspace_id, id) ON DELETE CASCADE
);
REVOKE UPDATE ON store_credentials FROM app_user;

-- ---------------------------------------------------------------------------------------------
-- First publication of a product-draft revision to a store. The partial unique index makes the
-- first publish happen once per (store, draft); a permanently failed one may be retried.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE publications (
  workspace_id         uuid NOT NULL,
  id                   uuid NOT NULL,
  store_id             uuid NOT NULL,
  draft_id             uuid NOT NULL,
  revision             integer NOT NULL,
  status               text NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending', 'publishing', 'published', 'failed')),
  platform_product_id  text,
  error_code           text,
  created_by           uuid REFERENCES users (id),
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  published_at         timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, store_id) REFERENCES stores (workspace_id, id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, draft_id, revision)
    REFERENCES record_revisions (workspace_id, record_id, revision) ON DELETE CASCADE,
  CHECK ((status = 'published') = (platform_product_id IS NOT NULL))
);
CREATE UNIQUE INDEX publications_first_publish_key ON publications (workspace_id, store_id, draft_id)
  WHERE status <> 'failed';
CREATE INDEX publications_created_idx ON publications (workspace_id, created_at DESC, id DESC);

-- ---------------------------------------------------------------------------------------------
-- Full syncs of a store's online products. At most one active (pending or running) sync per
-- store: the partial unique index arbitrates concurrent requests across processes. cursor is the
-- checkpoint (the platform's next-page cursor), so a redelivered job resumes where it stopped.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE store_syncs (
  workspace_id    uuid NOT NULL,
  id              uuid NOT NULL,
  store_id        uuid NOT NULL,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
  cursor          text,
  pages           integer NOT NULL DEFAULT 0,
  items_synced    integer NOT NULL DEFAULT 0,
  error_code      text,
  created_by      uuid REFERENCES users (id),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  completed_at    timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, store_id) REFERENCES stores (workspace_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX store_syncs_one_active_key ON store_syncs (workspace_id, store_id)
  WHERE status IN ('pending', 'running');
CREATE INDEX store_syncs_created_idx ON store_syncs (workspace_id, created_at DESC, id DESC);

-- The store's online products as last seen by a sync; upserts keyed by the platform's id.
CREATE TABLE store_products (
  workspace_id         uuid NOT NULL,
  store_id             uuid NOT NULL,
  platform_product_id  text NOT NULL,
  title                text NOT NULL,
  price                text,
  platform_status      text NOT NULL,
  platform_created_at  timestamptz,
  last_sync_id         uuid NOT NULL,
  first_seen_at        timestamptz NOT NULL DEFAULT now(),
  last_seen_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, store_id, platform_product_id),
  FOREIGN KEY (workspace_id, store_id) REFERENCES stores (workspace_id, id) ON DELETE CASCADE
);

-- ---------------------------------------------------------------------------------------------
-- AI tasks on a product draft. The vendor is called with a key derived from the task id (billed
-- once); the result lands on the draft as a feature execution (mode 'outbox') created with the
-- task and, where it applies, a new record revision.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE ai_tasks (
  workspace_id     uuid NOT NULL,
  id               uuid NOT NULL,
  kind             text NOT NULL CHECK (kind IN ('text', 'category', 'image')),
  draft_id         uuid NOT NULL,
  base_revision    integer NOT NULL,
  -- What the client asked for (target field, optional prompt); immutable.
  options          jsonb NOT NULL DEFAULT '{}',
  execution_id     uuid NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
  result           jsonb,
  result_revision  integer,
  error_code       text,
  created_by       uuid NOT NULL REFERENCES users (id),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  completed_at     timestamptz,
  PRIMARY KEY (workspace_id, id),
  UNIQUE (workspace_id, execution_id),
  FOREIGN KEY (workspace_id, draft_id, base_revision)
    REFERENCES record_revisions (workspace_id, record_id, revision) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, execution_id) REFERENCES feature_executions (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX ai_tasks_created_idx ON ai_tasks (workspace_id, created_at DESC, id DESC);

-- ---------------------------------------------------------------------------------------------
-- Row-level security: enabled and forced on every tenant table.
-- ---------------------------------------------------------------------------------------------
ALTER TABLE stores ENABLE ROW LEVEL SECURITY;
ALTER TABLE stores FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON stores
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE store_credentials ENABLE ROW LEVEL SECURITY;
ALTER TABLE store_credentials FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON store_credentials
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE publications ENABLE ROW LEVEL SECURITY;
ALTER TABLE publications FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON publications
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE store_syncs ENABLE ROW LEVEL SECURITY;
ALTER TABLE store_syncs FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON store_syncs
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE store_products ENABLE ROW LEVEL SECURITY;
ALTER TABLE store_products FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON store_products
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());

ALTER TABLE ai_tasks ENABLE ROW LEVEL SECURITY;
ALTER TABLE ai_tasks FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON ai_tasks
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());
