import { createHash, randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { MediaStack, pngSize, type OperationBody } from './media-stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

const MAX_BYTES = 200_000;

interface Media {
  id: string;
  status: string;
  contentType: string;
  size: number;
  objectKey: string;
  checksumSha256: string | null;
  width: number | null;
  height: number | null;
  thumbnail: { objectKey: string; width: number; height: number; contentType: string } | null;
  operationId: string | null;
}

/** Media over HTTP with real api, dispatcher and worker processes and platform-sim images. */
describe('media: upload → content → complete → worker derives (real processes)', () => {
  const stack = new MediaStack(t, { MEDIA_MAX_BYTES: String(MAX_BYTES), MEDIA_THUMBNAIL_SIZE: '64' });

  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  const create = (body: Record<string, unknown>, key = randomUUID()) =>
    stack.client.post<Media>(stack.ws('/media'), body, { key });

  const put = async (id: string, bytes: Buffer, contentType: string) => {
    const res = await fetch(stack.apiUrl + stack.ws(`/media/${id}/content`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${stack.user.accessToken}`, 'content-type': contentType },
      body: bytes,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  const complete = (id: string, key: string) =>
    stack.client.post<{ media: Media; operation: OperationBody }>(
      stack.ws(`/media/${id}/complete`),
      undefined,
      {
        key,
      },
    );

  async function uploaded(name: string, contentType: string) {
    const bytes = await stack.simBytes(name);
    const created = await create({ filename: name, contentType, size: bytes.length });
    expect(created.status).toBe(201);
    const up = await put(created.body.id, bytes, contentType);
    expect(up.status).toBe(200);
    expect(up.body.status).toBe('uploaded');
    return { id: created.body.id, bytes };
  }

  it('derives checksum, dimensions and a thumbnail; replays return the first bodies; a redelivery derives nothing twice', async () => {
    const bytes = await stack.simBytes('product-300x200.png');
    const createKey = randomUUID();
    const created = await create(
      { filename: 'product.png', contentType: 'image/png', size: bytes.length },
      createKey,
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      status: 'awaiting_content',
      contentType: 'image/png',
      size: bytes.length,
    });
    const id = created.body.id;

    expect((await put(id, bytes, 'image/png')).status).toBe(200);
    const key = randomUUID();
    const accepted = await complete(id, key);
    expect(accepted.status).toBe(202);
    expect(accepted.body.media).toMatchObject({
      id,
      status: 'processing',
      checksumSha256: null,
      thumbnail: null,
    });
    expect(accepted.body.operation).toMatchObject({
      status: 'pending',
      kind: 'media.process',
      resourceId: id,
    });
    expect(accepted.body.media.operationId).toBe(accepted.body.operation.id);

    const op = await stack.waitForOperation(accepted.body.operation.id);
    expect(op.error).toBeNull();
    const audited = await t.owner.query(
      `select action from audit_events where entity_id = $1 order by created_at, action`,
      [id],
    );
    expect(audited.rows.map((r) => r.action)).toEqual([
      'MEDIA_CREATED',
      'MEDIA_CONTENT_UPLOADED',
      'MEDIA_COMPLETED',
    ]);
    const media = (await stack.client.get<Media>(stack.ws(`/media/${id}`))).body;
    expect(media).toMatchObject({
      status: 'ready',
      width: 300,
      height: 200,
      checksumSha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(media.thumbnail).toMatchObject({ contentType: 'image/png', width: 64, height: 43 });
    const thumb = await stack.readObject(media.thumbnail!.objectKey);
    expect(thumb).not.toBeNull();
    expect(pngSize(thumb!)).toEqual({ width: 64, height: 43 });
    expect((await stack.readObject(media.objectKey))!.equals(bytes)).toBe(true);

    // Replays: exactly the first bodies although the media moved on, and flagged as replays.
    const replay = await complete(id, key);
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(accepted.text);
    const createReplay = await create(
      { filename: 'product.png', contentType: 'image/png', size: bytes.length },
      createKey,
    );
    expect(createReplay.status).toBe(201);
    expect(createReplay.headers.get('idempotent-replayed')).toBe('true');
    expect(createReplay.text).toBe(created.text);
    // Another key cannot complete it again.
    expect((await complete(id, randomUUID())).body).toMatchObject({
      code: 'MEDIA_STATE_CONFLICT',
      status: 409,
    });
    // Content is frozen once completed.
    expect((await put(id, bytes, 'image/png')).body).toMatchObject({ code: 'MEDIA_STATE_CONFLICT' });

    // Forced redeliveries: the media's state machine stops them at the claim; no object is
    // written again (a rewrite would change the inode).
    const before = stack.storageSnapshot();
    const processedAt = (await t.owner.query(`select processed_at from media where id = $1`, [id])).rows[0]
      .processed_at;
    const event = await stack.eventFor('mediaId', id);
    expect(event.queue).toBe('media');
    expect(event.payload).toEqual({ mediaId: id, operationId: accepted.body.operation.id });
    for (let i = 0; i < 2; i++) {
      const rerun = await stack.redeliver(event.id, 'media');
      expect(rerun).toEqual({ duplicate: false, result: { outcome: 'skipped', status: 'ready' } });
    }
    // The claim stops the redeliveries; the one inbox row is the first delivery's settlement.
    const inbox = await t.owner.query(`select handler from outbox_inbox where event_id = $1`, [event.id]);
    expect(inbox.rows).toEqual([{ handler: 'media.process:settle' }]);
    expect(stack.storageSnapshot()).toEqual(before);
    const after = (await t.owner.query(`select processed_at, status from media where id = $1`, [id])).rows[0];
    expect(after).toEqual({ processed_at: processedAt, status: 'ready' });
    expect((await stack.client.get<OperationBody>(stack.ws(`/operations/${op.id}`))).body).toEqual(op);
  });

  it('processes a JPEG and lists media newest first', async () => {
    const { id } = await uploaded('photo-640x480.jpg', 'image/jpeg');
    const accepted = await complete(id, randomUUID());
    await stack.waitForOperation(accepted.body.operation.id);
    const media = (await stack.client.get<Media>(stack.ws(`/media/${id}`))).body;
    expect(media).toMatchObject({ status: 'ready', width: 640, height: 480, contentType: 'image/jpeg' });
    expect(media.thumbnail).toMatchObject({ width: 64, height: 48 });

    const page = await stack.client.get<{ items: Media[]; nextCursor: string | null }>(
      stack.ws('/media?limit=1'),
    );
    expect(page.status).toBe(200);
    expect(page.body.items.map((m) => m.id)).toEqual([id]);
    expect(page.body.nextCursor).toEqual(expect.any(String));
    const next = await stack.client.get<{ items: Media[] }>(
      stack.ws(`/media?limit=10&cursor=${page.body.nextCursor}`),
    );
    expect(next.body.items.map((m) => m.id)).not.toContain(id);
    expect(next.body.items.length).toBeGreaterThan(0);

    // Crafted cursors PostgreSQL's casts would refuse are a 422, never a 500.
    const crafted = (at: string, cursorId: string) =>
      Buffer.from(JSON.stringify({ at, id: cursorId })).toString('base64url');
    for (const cursor of [
      crafted('1', randomUUID()),
      crafted(new Date().toISOString(), '-'.repeat(36)),
      crafted('2026-11-30 05:00:00', randomUUID()),
    ]) {
      const bad = await stack.client.get(stack.ws(`/media?limit=10&cursor=${cursor}`));
      expect(bad.status).toBe(422);
      expect(bad.body).toMatchObject({ code: 'VALIDATION_FAILED' });
    }
  });

  it('refuses content whose magic bytes do not match the declared type', async () => {
    const jpeg = await stack.simBytes('x-32x32.jpg');
    const created = await create({ filename: 'x.png', contentType: 'image/png', size: jpeg.length });
    const wrong = await put(created.body.id, jpeg, 'image/png');
    expect(wrong.status).toBe(422);
    expect(wrong.body).toMatchObject({
      code: 'MEDIA_TYPE_MISMATCH',
      declaredType: 'image/png',
      detectedType: 'image/jpeg',
    });

    const html = Buffer.from('<html><script>alert(1)</script></html>');
    const h = await create({ filename: 'x.png', contentType: 'image/png', size: html.length });
    const notImage = await put(h.body.id, html, 'application/octet-stream');
    expect(notImage.status).toBe(422);
    expect(notImage.body).toMatchObject({ code: 'MEDIA_TYPE_MISMATCH', detectedType: null });
    // Nothing was stored, and the upload cannot be completed.
    expect(await stack.readObject(h.body.objectKey)).toBeNull();
    expect((await complete(h.body.id, randomUUID())).body).toMatchObject({
      code: 'MEDIA_STATE_CONFLICT',
    });

    const unsupported = await create({ filename: 'x.svg', contentType: 'image/svg+xml', size: 10 });
    expect(unsupported.status).toBe(415);
    expect(unsupported.body).toMatchObject({ code: 'MEDIA_TYPE_UNSUPPORTED' });
  });

  it('refuses oversize uploads with 413, at creation and on the wire', async () => {
    const declared = await create({ filename: 'big.png', contentType: 'image/png', size: MAX_BYTES + 1 });
    expect(declared.status).toBe(413);
    expect(declared.body).toMatchObject({ code: 'MEDIA_TOO_LARGE', limitBytes: MAX_BYTES });

    // A small declaration, then a body over MEDIA_MAX_BYTES: refused before the handler.
    const big = await stack.simBytes('noise-400x400.png?noise=1');
    expect(big.length).toBeGreaterThan(MAX_BYTES);
    const created = await create({ filename: 'n.png', contentType: 'image/png', size: 1000 });
    const res = await put(created.body.id, big, 'image/png');
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' }); // refused while it arrives

    // Within the limit but not what was declared.
    const small = await stack.simBytes('s-16x16.png');
    const mismatch = await put(created.body.id, small, 'image/png');
    expect(mismatch.status).toBe(422);
    expect(mismatch.body).toMatchObject({ code: 'MEDIA_SIZE_MISMATCH' });
  });

  it('requires an Idempotency-Key on create and complete', async () => {
    const res = await stack.client.post(stack.ws('/media'), {
      filename: 'a.png',
      contentType: 'image/png',
      size: 10,
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REQUIRED' });
    const c = await stack.client.post(stack.ws(`/media/${randomUUID()}/complete`));
    expect(c.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REQUIRED' });
  });
});
