-- 026: a succeeded material transfer yields a media.
--
-- A transfer used to end as an object in storage that nothing else could use: a product draft's
-- imageIds name media. Now the transfer's settlement inserts, in its own transaction (so exactly
-- once, whatever the redeliveries), a media whose original is the transfer's object (no second
-- copy of the bytes), processing under its own operation like a completed upload, and records it
-- here. Transfers that succeeded before this migration have none; one that has not succeeded never
-- has one. The foreign key includes the workspace, so a transfer can only name a media of its own
-- workspace; the unique index makes a media the product of one transfer at most.
ALTER TABLE material_transfers
  ADD COLUMN media_id uuid,
  ADD CONSTRAINT material_transfers_media_fkey
    FOREIGN KEY (workspace_id, media_id) REFERENCES media (workspace_id, id),
  ADD CONSTRAINT material_transfers_media_when_succeeded CHECK (media_id IS NULL OR status = 'succeeded');
CREATE UNIQUE INDEX material_transfers_media_key ON material_transfers (workspace_id, media_id)
  WHERE media_id IS NOT NULL;
