-- 028: the transfers that succeeded before 026 get their media.
--
-- 026 made a transfer's settlement insert a media; a transfer settled before it has none. This
-- appends, in the migration's transaction, one outbox event per such transfer for the worker's
-- material-transfer.media-backfill job (transfer-media-backfill.job.ts), which makes the media
-- exactly as a settlement does today, under the transfer's row lock and only while it still has
-- none: a second event for the same transfer changes nothing. A worker of a version before this
-- job keeps the event delayed until one that knows it takes it. Runs as the owner (BYPASSRLS):
-- every workspace's transfers. max_attempts is the job's own (maxAttempts 5).
INSERT INTO outbox_events (id, workspace_id, queue, event_type, payload, max_attempts)
SELECT gen_random_uuid(), t.workspace_id, 'material-transfers', 'material-transfer.media-backfill',
       jsonb_build_object('transferId', t.id), 5
  FROM material_transfers t
 WHERE t.status = 'succeeded' AND t.media_id IS NULL
   AND t.content_type IS NOT NULL AND t.size IS NOT NULL
 ORDER BY t.workspace_id, t.completed_at;
