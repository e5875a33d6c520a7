-- 025 product updates: a newer revision of a draft already live on a store updates that product.
--
-- A publication is the (store, draft) product; publication_updates are the requests to push a
-- newer revision to it, one row per revision (its accept-time columns never change, so a replay
-- rebuilds the first answer). Ordering per product is the database's:
--   * live_revision, the revision the marketplace product shows, only ever moves forward (trigger);
--   * sending_revision is the one update in flight to the marketplace: an update is sent only
--     while it holds this slot, and takes it only when its revision is newer than the live one
--     and no newer update was requested, so a late or redelivered older update never overwrites
--     a newer one.
ALTER TABLE publications
  ADD COLUMN live_revision integer,
  ADD COLUMN sending_revision integer,
  ADD CONSTRAINT publications_live_check CHECK ((status = 'published') = (live_revision IS NOT NULL)),
  ADD CONSTRAINT publications_sending_check CHECK (sending_revision IS NULL OR status = 'published');
UPDATE publications SET live_revision = revision WHERE status = 'published';
-- The target of the updates' foreign key: an update names its publication's own draft.
CREATE UNIQUE INDEX publications_draft_key ON publications (workspace_id, id, draft_id);

CREATE FUNCTION publications_live_revision_forward() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.live_revision IS NOT NULL AND (NEW.live_revision IS NULL OR NEW.live_revision < OLD.live_revision) THEN
    RAISE EXCEPTION 'publication %: live revision % cannot go back to %', OLD.id, OLD.live_revision, NEW.live_revision
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER publications_live_revision_forward BEFORE UPDATE OF live_revision ON publications
  FOR EACH ROW EXECUTE FUNCTION publications_live_revision_forward();

-- superseded: a newer revision was requested or is already live before this one was sent; it
-- is never sent. outcome_unknown: the marketplace never confirmed it (a later update overwrites
-- whatever it did).
CREATE TABLE publication_updates (
  workspace_id   uuid NOT NULL,
  id             uuid NOT NULL,
  publication_id uuid NOT NULL,
  draft_id       uuid NOT NULL,
  revision       integer NOT NULL,
  status         text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'sending', 'applied', 'superseded', 'failed', 'outcome_unknown')),
  error_code     text,
  -- The update's one operation, named before the operation row is written (hence deferred).
  operation_id   uuid NOT NULL,
  created_by     uuid REFERENCES users (id),
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  applied_at     timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, publication_id, draft_id)
    REFERENCES publications (workspace_id, id, draft_id) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, draft_id, revision)
    REFERENCES record_revisions (workspace_id, record_id, revision) ON DELETE CASCADE,
  FOREIGN KEY (workspace_id, operation_id) REFERENCES operations (workspace_id, id) DEFERRABLE INITIALLY DEFERRED,
  CHECK ((status = 'applied') = (applied_at IS NOT NULL))
);
-- One live or open update per (product, revision): a second request for it is a 409. One that
-- failed or whose outcome is unknown may be requested again.
CREATE UNIQUE INDEX publication_updates_revision_key ON publication_updates (workspace_id, publication_id, revision)
  WHERE status IN ('pending', 'sending', 'applied');
-- A publication's updates, newest first: the list route's page is an index range (as sql/019).
CREATE INDEX publication_updates_page_idx ON publication_updates
  (workspace_id, publication_id, date_trunc('milliseconds', created_at AT TIME ZONE 'UTC'), id);

ALTER TABLE publication_updates ENABLE ROW LEVEL SECURITY;
ALTER TABLE publication_updates FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_isolation ON publication_updates
  USING (workspace_id = app_current_workspace()) WITH CHECK (workspace_id = app_current_workspace());
