import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MIGRATIONS_DIR } from '@listing/db';
import { useTestDatabase } from '@listing/testing';
import { waitUntil } from '../outbox/processes';
import { MediaStack, pngSize, type OperationBody } from './media-stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

interface Media {
  id: string;
  status: string;
  filename: string;
  contentType: string;
  size: number;
  objectKey: string;
  checksumSha256: string | null;
  width: number | null;
  height: number | null;
  thumbnail: { objectKey: string; width: number; height: number; contentType: string } | null;
  operationId: string | null;
}

interface Transfer {
  id: string;
  status: string;
  objectKey: string;
  checksumSha256: string | null;
  operationId: string;
  mediaId: string | null;
}

/**
 * A succeeded material transfer becomes a media processed like an upload; media with the same
 * bytes share their derived objects. Real api, dispatcher and worker; platform-sim is the source.
 */
describe('transfers become media (real processes)', () => {
  const stack = new MediaStack(t, { MEDIA_THUMBNAIL_SIZE: '64' });

  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  const source = (name: string) => `${stack.sim.url}/platform/v1/media/${name}`;
  const getMedia = async (id: string) => (await stack.client.get<Media>(stack.ws(`/media/${id}`))).body;

  async function upload(name: string, bytes: Buffer, contentType: string): Promise<Media> {
    const created = await stack.client.post<Media>(
      stack.ws('/media'),
      { filename: name, contentType, size: bytes.length },
      { key: randomUUID() },
    );
    expect(created.status).toBe(201);
    const put = await fetch(stack.apiUrl + stack.ws(`/media/${created.body.id}/content`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${stack.user.accessToken}`, 'content-type': contentType },
      body: bytes,
    });
    expect(put.status).toBe(200);
    const completed = await stack.client.post<{ media: Media; operation: OperationBody }>(
      stack.ws(`/media/${created.body.id}/complete`),
      undefined,
      { key: randomUUID() },
    );
    expect(completed.status).toBe(202);
    await stack.waitForOperation(completed.body.operation.id);
    return getMedia(created.body.id);
  }

  /** What the first delivery of an outbox event's job returned (`{ duplicate, result }`). */
  async function firstResult(eventId: string, queueName: string) {
    const job = await waitUntil('the job to finish', async () => {
      const j = await stack.queue(queueName).getJob(eventId);
      return j?.finishedOn ? j : undefined;
    });
    expect(job.failedReason).toBeFalsy();
    return job.returnvalue as Record<string, unknown>;
  }

  /** Committed objects (meta files) and data files stored under a key prefix. */
  const storedUnder = (prefix: string) => {
    const files = Object.keys(stack.storageSnapshot());
    return {
      objects: files.filter((f) => f.startsWith(`meta/${prefix}`)),
      dataFiles: files.filter((f) => f.startsWith(`data/${prefix}`)),
    };
  };

  it('the same bytes uploaded and transferred: one derived object set; the transfer’s media works in imageIds; a redelivery makes nothing twice', async () => {
    const name = 'shared-300x200.png';
    const bytes = await stack.simBytes(name);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const derived = `workspaces/${stack.user.workspaceId}/derived/sha256-${sha256}/`;

    // The upload first: it derives the thumbnail, under the content's key.
    const uploaded = await upload('my-upload.png', bytes, 'image/png');
    expect(uploaded).toMatchObject({ status: 'ready', checksumSha256: sha256, width: 300, height: 200 });
    expect(uploaded.thumbnail).toMatchObject({
      objectKey: `${derived}thumbnail-64.png`,
      width: 64,
      height: 43,
    });
    const thumbnailBefore = stack.storageSnapshot();

    // The same image transferred: the 202 (and its replay) has no media yet.
    const key = randomUUID();
    const sourceUrl = `${source(name)}?X-Amz-Signature=sig-${randomUUID()}`;
    const accepted = await stack.client.post<{ transfer: Transfer; operation: OperationBody }>(
      stack.ws('/material-transfers'),
      { sourceUrl },
      { key },
    );
    expect(accepted.status).toBe(202);
    expect(accepted.body.transfer).toMatchObject({ status: 'pending', mediaId: null });
    await stack.waitForOperation(accepted.body.operation.id);
    const transfer = (
      await stack.client.get<Transfer>(stack.ws(`/material-transfers/${accepted.body.transfer.id}`))
    ).body;
    expect(transfer).toMatchObject({
      status: 'succeeded',
      checksumSha256: sha256,
      mediaId: expect.any(String),
    });
    const mediaId = transfer.mediaId!;
    expect(mediaId).not.toBe(uploaded.id);

    // The transfer's media: its content is the transfer's copy, processed under its own operation.
    const pending = await getMedia(mediaId);
    expect(pending).toMatchObject({
      filename: name, // the source's last path segment
      contentType: 'image/png',
      size: bytes.length,
      objectKey: transfer.objectKey,
      operationId: expect.any(String),
    });
    const op = await stack.waitForOperation(pending.operationId!);
    expect(op).toMatchObject({ kind: 'media.process', resourceId: mediaId, error: null });
    const media = await getMedia(mediaId);
    expect(media).toMatchObject({ status: 'ready', checksumSha256: sha256, width: 300, height: 200 });
    // One derived object set: the upload's thumbnail, reused as it was (not rewritten).
    expect(media.thumbnail).toEqual(uploaded.thumbnail);
    const mediaEvent = await stack.eventFor('mediaId', mediaId);
    expect(await firstResult(mediaEvent.id, 'media')).toEqual({
      duplicate: false,
      result: { outcome: 'ready', thumbnailWritten: false },
    });
    expect(storedUnder(derived)).toEqual({
      objects: [`meta/${derived}thumbnail-64.png.json`],
      dataFiles: [expect.stringMatching(new RegExp(`^data/${derived}thumbnail-64\\.png(~[0-9a-f]+)?$`))],
    });
    const thumbnailFile = (snapshot: typeof thumbnailBefore) =>
      Object.entries(snapshot).filter(([f]) => f.includes(`/derived/sha256-${sha256}/`));
    expect(thumbnailFile(stack.storageSnapshot())).toEqual(thumbnailFile(thumbnailBefore));
    expect(pngSize((await stack.readObject(media.thumbnail!.objectKey))!)).toEqual({ width: 64, height: 43 });
    // The transfer's bytes are the media's content.
    const content = await fetch(stack.apiUrl + stack.ws(`/media/${mediaId}/content`), {
      headers: { authorization: `Bearer ${stack.user.accessToken}` },
    });
    expect(content.status).toBe(200);
    expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);

    // The replay of the 202 is still the first answer (mediaId null), whatever happened since.
    const replay = await stack.client.post(stack.ws('/material-transfers'), { sourceUrl }, { key });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(accepted.text);

    // The transfer's media id works in a draft's imageIds, on create and on patch.
    const drafts = stack.ws('/product-drafts');
    const draft = await stack.client.post<{ id: string; data: { imageIds: string[] } }>(drafts, {
      title: 'transferred image',
      imageIds: [mediaId],
    });
    expect(draft.status).toBe(201);
    expect(draft.body.data.imageIds).toEqual([mediaId]);
    const patched = await stack.client.request<{ data: { imageIds: string[] } }>(
      'PATCH',
      `${drafts}/${draft.body.id}`,
      { body: { imageIds: [uploaded.id, mediaId] }, headers: { 'if-match': '"1"' } },
    );
    expect(patched.status).toBe(200);
    expect(patched.body.data.imageIds).toEqual([uploaded.id, mediaId]);

    // Audit: the media was the system's doing, from the transfer (ids only).
    const audited = await t.owner.query(
      `select action, actor, metadata from audit_events where entity_id = $1`,
      [mediaId],
    );
    expect(audited.rows).toEqual([
      {
        action: 'MEDIA_CREATED',
        actor: 'system',
        metadata: { transferId: transfer.id, operationId: pending.operationId },
      },
    ]);

    // Forced redeliveries of the transfer event and of the media's: no second media, operation,
    // job or object.
    const counts = async () =>
      (
        await t.owner.query(
          `select (select count(*)::int from media where original_key = $1) as media,
                  (select count(*)::int from operations where kind = 'media.process' and resource_id = $2) as operations,
                  (select count(*)::int from outbox_events where payload->>'mediaId' = $2::text) as jobs`,
          [transfer.objectKey, mediaId],
        )
      ).rows[0];
    expect(await counts()).toEqual({ media: 1, operations: 1, jobs: 1 });
    const snapshot = stack.storageSnapshot();
    const transferEvent = await stack.eventFor('transferId', transfer.id);
    expect(await stack.redeliver(transferEvent.id, 'material-transfers')).toEqual({
      duplicate: false,
      result: { outcome: 'skipped', status: 'succeeded' },
    });
    expect(await stack.redeliver(mediaEvent.id, 'media')).toEqual({
      duplicate: false,
      result: { outcome: 'skipped', status: 'ready' },
    });
    expect(await counts()).toEqual({ media: 1, operations: 1, jobs: 1 });
    expect(stack.storageSnapshot()).toEqual(snapshot);
    expect(await getMedia(mediaId)).toEqual(media);
  });

  it('a transfer settled before transfers made media gets one from the backfill migration, once', async () => {
    const name = 'backfilled-80x60.png';
    const accepted = await stack.client.post<{ transfer: Transfer; operation: OperationBody }>(
      stack.ws('/material-transfers'),
      { sourceUrl: source(name) },
      { key: randomUUID() },
    );
    await stack.waitForOperation(accepted.body.operation.id);
    const transferId = accepted.body.transfer.id;
    const settled = (await stack.client.get<Transfer>(stack.ws(`/material-transfers/${transferId}`))).body;
    await stack.waitForOperation((await getMedia(settled.mediaId!)).operationId!);
    // As sql/026 found a transfer settled before it: succeeded, no media.
    await t.owner.query(`update material_transfers set media_id = null where id = $1`, [transferId]);

    // The migration's own text, run twice: two events for the one transfer.
    const backfill = readFileSync(path.join(MIGRATIONS_DIR, '028_transfer_media_backfill.sql'), 'utf8');
    await t.owner.query(backfill);
    await t.owner.query(backfill);
    const { rows: events } = await t.owner.query<{ id: string; payload: unknown }>(
      `select id, payload from outbox_events where event_type = 'material-transfer.media-backfill'`,
    );
    // The other transfers of this file name their media: no event for them.
    expect(events.map((e) => e.payload)).toEqual([{ transferId }, { transferId }]);
    const results = await Promise.all(events.map((e) => firstResult(e.id, 'material-transfers')));
    const created = results.filter((r) => (r.result as { outcome: string }).outcome === 'created');
    expect(created).toHaveLength(1);
    expect(results).toContainEqual({
      duplicate: false,
      result: { outcome: 'skipped', reason: 'has a media' },
    });

    const transfer = (await stack.client.get<Transfer>(stack.ws(`/material-transfers/${transferId}`))).body;
    const mediaId = (created[0]!.result as { mediaId: string }).mediaId;
    expect(transfer).toMatchObject({ status: 'succeeded', mediaId });
    expect(mediaId).not.toBe(settled.mediaId);
    const pending = await getMedia(mediaId);
    expect(pending).toMatchObject({ filename: name, objectKey: transfer.objectKey });
    await stack.waitForOperation(pending.operationId!);
    expect(await getMedia(mediaId)).toMatchObject({
      status: 'ready',
      contentType: 'image/png',
      width: 80,
      height: 60,
      checksumSha256: transfer.checksumSha256,
    });
  });

  it('a transfer of bytes nobody uploaded derives its own thumbnail, under the content’s key', async () => {
    const name = 'only-transferred-120x90.jpg';
    const bytes = await stack.simBytes(name);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const accepted = await stack.client.post<{ transfer: Transfer; operation: OperationBody }>(
      stack.ws('/material-transfers'),
      { sourceUrl: source(name) },
      { key: randomUUID() },
    );
    await stack.waitForOperation(accepted.body.operation.id);
    const { mediaId } = (
      await stack.client.get<Transfer>(stack.ws(`/material-transfers/${accepted.body.transfer.id}`))
    ).body;
    const pending = await getMedia(mediaId!);
    await stack.waitForOperation(pending.operationId!);
    const mediaEvent = await stack.eventFor('mediaId', mediaId!);
    expect(await firstResult(mediaEvent.id, 'media')).toEqual({
      duplicate: false,
      result: { outcome: 'ready', thumbnailWritten: true },
    });
    expect(await getMedia(mediaId!)).toMatchObject({
      status: 'ready',
      contentType: 'image/jpeg',
      width: 120,
      height: 90,
      checksumSha256: sha256,
      thumbnail: {
        objectKey: `workspaces/${stack.user.workspaceId}/derived/sha256-${sha256}/thumbnail-64.png`,
        width: 64,
        height: 48,
      },
    });
  });
});
