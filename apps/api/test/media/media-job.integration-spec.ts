import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InboxRepository, type JobContext } from '@listing/outbox';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import sharp from 'sharp';
import { loadMediaConfig } from '../../src/config/media-config';
import {
  derivedThumbnailKey,
  MediaProcessJob,
  mediaProcessJob,
  originalKey,
} from '../../src/modules/media/media.jobs';
import { MediaRepository } from '../../src/modules/media/media.repository';
import { LocalDirectoryObjectStorage } from '../../src/modules/object-storage/local-directory-object-storage';
import { OperationProgress } from '../../src/modules/operations/operation-progress.service';
import { OperationsRepository } from '../../src/modules/operations/operations.repository';

const t = useTestDatabase();

/**
 * The media job reads and writes storage (a network call on S3) and decodes images outside any
 * transaction: while it does, its media row is free and no connection is held for it.
 */
describe('media job: no transaction across storage I/O, thumbnails by content', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'media-job-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('the media row is unlocked and no transaction is open while storage is read and written; the thumbnail is the content’s', async () => {
    const { workspaceId, userId } = await seedWorkspace(t.owner, 'media-job');
    const mediaId = randomUUID();
    const operationId = randomUUID();
    const key = originalKey(workspaceId, mediaId);
    const png = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#c33' } })
      .png()
      .toBuffer();
    await t.owner.query(
      `insert into operations (workspace_id, id, kind, resource_type, resource_id, created_by)
       values ($1, $2, 'media.process', 'media', $3, $4)`,
      [workspaceId, operationId, mediaId, userId],
    );
    await t.owner.query(
      `insert into media (workspace_id, id, status, filename, content_type, declared_size, original_key,
                          operation_id, created_by, uploaded_at, completed_at)
       values ($1, $2, 'processing', 'a.png', 'image/png', $3, $4, $5, $6, now(), now())`,
      [workspaceId, mediaId, png.length, key, operationId, userId],
    );

    const seen: Array<{ call: string; inTransaction: boolean }> = [];
    // Another session takes the row lock with a 100 ms bound: a 55P03 here fails the job.
    const probe = async (call: string) => {
      seen.push({ call, inTransaction: t.agentDb.isInTransaction() });
      const c = await t.owner.connect();
      try {
        await c.query('begin');
        await c.query(`set local lock_timeout = '100ms'`);
        await c.query('select 1 from media where id = $1 for update', [mediaId]);
      } finally {
        await c.query('rollback');
        c.release();
      }
    };
    const storage = new (class extends LocalDirectoryObjectStorage {
      override async get(k: string) {
        await probe('get');
        return super.get(k);
      }
      override async putIfAbsent(k: string, body: Buffer, options: { contentType: string }) {
        await probe('putIfAbsent');
        return super.putIfAbsent(k, body, options);
      }
    })(root);
    await storage.put(key, png, { contentType: 'image/png' });

    // The runtime opens no transaction around the handler: it opens its own short ones.
    expect(mediaProcessJob.transaction).toBe(false);
    const db = t.agentDb;
    const operations = new OperationProgress(new OperationsRepository(db));
    const job = new MediaProcessJob(db, new MediaRepository(db), operations, storage, loadMediaConfig({}));
    const contextOf = (eventId: string) =>
      ({
        eventId,
        workspaceId,
        attempt: 1,
        job: { name: mediaProcessJob.name, opts: { attempts: 5 } },
        inboxOnce: (key: string) => new InboxRepository(db).record(workspaceId, key, eventId),
      }) as unknown as JobContext;
    const outcome = await job.process({ mediaId, operationId }, contextOf(randomUUID()));

    expect(outcome).toEqual({ outcome: 'ready', thumbnailWritten: true });
    expect(seen).toEqual([
      { call: 'get', inTransaction: false },
      { call: 'putIfAbsent', inTransaction: false },
    ]);
    const { rows } = await t.owner.query(
      `select m.status, o.status as op, m.thumbnail_key from media m join operations o on o.id = m.operation_id
        where m.id = $1`,
      [mediaId],
    );
    // The thumbnail's key is the content's, not the media's.
    const sha256 = createHash('sha256').update(png).digest('hex');
    const thumbnail = derivedThumbnailKey(workspaceId, sha256, loadMediaConfig({}).MEDIA_THUMBNAIL_SIZE);
    expect(thumbnail).toBe(`workspaces/${workspaceId}/derived/sha256-${sha256}/thumbnail-256.png`);
    expect(rows[0]).toEqual({ status: 'ready', op: 'succeeded', thumbnail_key: thumbnail });

    // A second media of the same bytes (under another original key) reuses that thumbnail.
    const second = randomUUID();
    const secondOperation = randomUUID();
    await t.owner.query(
      `insert into operations (workspace_id, id, kind, resource_type, resource_id, created_by)
       values ($1, $2, 'media.process', 'media', $3, $4)`,
      [workspaceId, secondOperation, second, userId],
    );
    await t.owner.query(
      `insert into media (workspace_id, id, status, filename, content_type, declared_size, original_key,
                          operation_id, created_by, uploaded_at, completed_at)
       values ($1, $2, 'processing', 'b.png', 'image/png', $3, $4, $5, $6, now(), now())`,
      [workspaceId, second, png.length, originalKey(workspaceId, second), secondOperation, userId],
    );
    await storage.put(originalKey(workspaceId, second), png, { contentType: 'image/png' });
    const again = await job.process(
      { mediaId: second, operationId: secondOperation },
      contextOf(randomUUID()),
    );
    expect(again).toEqual({ outcome: 'ready', thumbnailWritten: false });
    const shared = await t.owner.query(`select thumbnail_key from media where id = $1`, [second]);
    expect(shared.rows[0].thumbnail_key).toBe(thumbnail);
  });
});
