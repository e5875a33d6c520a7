import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { idleTransactions, useTestDatabase } from '@listing/testing';
import { MediaStack, type OperationBody } from './media-stack';
import { waitUntil } from '../outbox/processes';

const t = useTestDatabase();
jest.setTimeout(90_000);

const MAX_BYTES = 300_000;

interface Transfer {
  id: string;
  status: string;
  sourceUrl: string;
  objectKey: string;
  contentType: string | null;
  size: number | null;
  checksumSha256: string | null;
  width: number | null;
  height: number | null;
  error: { code: string; message: string } | null;
  operationId: string;
  mediaId: string | null;
}

/** Material transfers over HTTP with real api, dispatcher and worker processes; platform-sim is the source. */
describe('material transfers: allowlisted copy into object storage (real processes)', () => {
  const stack = new MediaStack(t, { MEDIA_MAX_BYTES: String(MAX_BYTES), MATERIAL_MAX_REDIRECTS: '2' });
  // A listening server on a port that is NOT allowlisted: it must never be reached.
  let internal: Server;
  let internalPort = 0;
  let internalHits = 0;
  const secrets: string[] = [];

  beforeAll(async () => {
    internal = createServer((_req, res) => {
      internalHits += 1;
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    });
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    internalPort = (internal.address() as AddressInfo).port;
    await stack.start();
  });
  afterAll(async () => {
    await stack.stop();
    await new Promise<void>((resolve) => internal.close(() => resolve()));
  });

  const media = (name: string) => `${stack.sim.url}/platform/v1/media/${name}`;
  const create = (sourceUrl: string, key = randomUUID()) =>
    stack.client.post<{ transfer: Transfer; operation: OperationBody }>(
      stack.ws('/material-transfers'),
      { sourceUrl },
      { key },
    );
  const getTransfer = async (id: string) =>
    (await stack.client.get<Transfer>(stack.ws(`/material-transfers/${id}`))).body;

  it('copies the image once: checksum and dimensions, replay with the same key, dedupe per source, forced redeliveries fetch nothing again', async () => {
    const expected = await stack.simBytes('collected-320x240.jpg');
    const signature = `sig-${randomUUID()}`;
    secrets.push(signature);
    const source = `${media('collected-320x240.jpg')}?X-Amz-Signature=${signature}&X-Amz-Expires=600`;
    const fetchesBefore = stack.sim.state.counters.mediaRequests;

    const key = randomUUID();
    const accepted = await create(source, key);
    expect(accepted.status).toBe(202);
    expect(accepted.body.transfer).toMatchObject({
      status: 'pending',
      sourceUrl: media('collected-320x240.jpg'), // the source key: no signature, ever
      checksumSha256: null,
      mediaId: null,
    });
    expect(accepted.body.operation).toMatchObject({ status: 'pending', kind: 'material-transfer.copy' });
    const id = accepted.body.transfer.id;
    const audited = await t.owner.query(`select action, metadata from audit_events where entity_id = $1`, [
      id,
    ]);
    expect(audited.rows).toEqual([
      { action: 'MATERIAL_TRANSFER_CREATED', metadata: { operationId: accepted.body.operation.id } },
    ]);

    await stack.waitForOperation(accepted.body.operation.id);
    const transfer = await getTransfer(id);
    expect(transfer).toMatchObject({
      status: 'succeeded',
      contentType: 'image/jpeg',
      size: expected.length,
      width: 320,
      height: 240,
      checksumSha256: createHash('sha256').update(expected).digest('hex'),
      error: null,
      mediaId: expect.any(String),
    });
    expect((await stack.readObject(transfer.objectKey))!.equals(expected)).toBe(true);
    expect(stack.sim.state.counters.mediaRequests).toBe(fetchesBefore + 1);

    // Replay: the first 202 body exactly, flagged.
    const replay = await create(source, key);
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(accepted.text);

    // Another key for the same source (even re-signed) → 409 naming the existing transfer.
    const resigned = `${media('collected-320x240.jpg')}?X-Amz-Signature=other-${signature}`;
    secrets.push(`other-${signature}`);
    for (const again of [source, resigned]) {
      const dup = await create(again);
      expect(dup.status).toBe(409);
      expect(dup.body).toMatchObject({
        code: 'MATERIAL_TRANSFER_EXISTS',
        transferId: id,
        operationId: accepted.body.operation.id,
      });
    }
    const { rows } = await t.owner.query(`select count(*)::int as n from material_transfers`);
    expect(rows[0].n).toBe(1);

    // The event carries ids only.
    const event = await stack.eventFor('transferId', id);
    expect(event.payload).toEqual({ transferId: id, operationId: accepted.body.operation.id });

    // Forced redeliveries: the transfer's own state stops them at the claim. No source fetch, no
    // object rewritten; the one inbox row is the first delivery's settlement. The transfer's media
    // derives its thumbnail under its own operation: the snapshot waits for it, or it would catch
    // that job's writes half done.
    const transferMedia = await stack.client.get<{ operationId: string }>(
      stack.ws(`/media/${transfer.mediaId}`),
    );
    await stack.waitForOperation(transferMedia.body.operationId);
    const snapshot = stack.storageSnapshot();
    for (let i = 0; i < 2; i++) {
      expect(await stack.redeliver(event.id, 'material-transfers')).toEqual({
        duplicate: false,
        result: { outcome: 'skipped', status: 'succeeded' },
      });
    }
    const inbox = await t.owner.query(`select handler from outbox_inbox where event_id = $1`, [event.id]);
    expect(inbox.rows).toEqual([{ handler: 'material-transfer.copy:settle' }]);
    expect(stack.sim.state.counters.mediaRequests).toBe(fetchesBefore + 1);
    expect(stack.storageSnapshot()).toEqual(snapshot);

    const list = await stack.client.get<{ items: Transfer[] }>(stack.ws('/material-transfers'));
    expect(list.body.items.map((i) => i.id)).toContain(id);
  });

  it('a copy already in storage (crash after the write, before the commit) is not fetched again', async () => {
    const source = media('recovered-64x64.png');
    const accepted = await create(source);
    await stack.waitForOperation(accepted.body.operation.id);
    const id = accepted.body.transfer.id;
    // Simulate the crash window: the row goes back to running with the object already written,
    // and what the settlement made with it (the media, its operation, job and audit) never was.
    const { mediaId } = await getTransfer(id);
    const made = await stack.client.get<{ operationId: string }>(stack.ws(`/media/${mediaId}`));
    await stack.waitForOperation(made.body.operationId);
    const mediaEvent = await stack.eventFor('mediaId', mediaId!);
    await t.owner.query(
      `update material_transfers set status = 'running', completed_at = null, checksum_sha256 = null, media_id = null
        where id = $1`,
      [id],
    );
    await t.owner.query(`delete from outbox_inbox where event_id = $1`, [mediaEvent.id]);
    await t.owner.query(`delete from outbox_events where id = $1`, [mediaEvent.id]);
    await t.owner.query(`delete from audit_events where entity_id = $1`, [mediaId]);
    await t.owner.query(`delete from media where id = $1`, [mediaId]);
    await t.owner.query(`delete from operations where id = $1`, [made.body.operationId]);
    await t.owner.query(`update operations set status = 'running', completed_at = null where id = $1`, [
      accepted.body.operation.id,
    ]);
    const fetches = stack.sim.state.counters.mediaRequests;
    const event = await stack.eventFor('transferId', id);
    // The settlement never committed in that crash: neither did its inbox row.
    await t.owner.query(`delete from outbox_inbox where event_id = $1`, [event.id]);
    const rerun = await stack.redeliver(event.id, 'material-transfers');
    expect(rerun).toEqual({
      duplicate: false,
      result: { outcome: 'succeeded', fetched: false, mediaId: expect.any(String) },
    });
    expect(stack.sim.state.counters.mediaRequests).toBe(fetches);
    const settled = await getTransfer(id);
    expect(settled).toMatchObject({
      status: 'succeeded',
      width: 64,
      height: 64,
      mediaId: rerun.result!.mediaId,
    });
    // The media of the settlement that committed, and only it.
    const settledMedia = await t.owner.query(`select id from media where original_key = $1`, [
      settled.objectKey,
    ]);
    expect(settledMedia.rows).toEqual([{ id: settled.mediaId }]);
  });

  it('holds no transaction and no row lock while the source is being fetched', async () => {
    stack.sim.state.faults.configure([{ latencyMs: 1500, routes: ['/platform/v1/media/slow-'] } as never]);
    try {
      const accepted = await create(media('slow-40x30.png'));
      expect(accepted.status).toBe(202);
      const id = accepted.body.transfer.id;
      await waitUntil('the transfer to be running', async () => (await getTransfer(id)).status === 'running');
      // Mid-fetch: the row can be locked at once, and no connection sits in a transaction.
      const client = await t.owner.connect();
      try {
        await client.query('begin');
        await client.query(`set local lock_timeout = '100ms'`);
        const { rows } = await client.query(
          `select status from material_transfers where id = $1 for update`,
          [id],
        );
        expect(rows[0].status).toBe('running');
        await client.query('rollback');
      } finally {
        client.release();
      }
      await new Promise((r) => setTimeout(r, 400)); // still inside the 1.5 s fetch
      expect(await idleTransactions(t.info, 300)).toEqual([]);
      await stack.waitForOperation(accepted.body.operation.id);
      expect(await getTransfer(id)).toMatchObject({ status: 'succeeded', width: 40, height: 30 });
    } finally {
      stack.sim.state.faults.clear();
    }
  });

  async function failedWith(sourceUrl: string, code: string) {
    const accepted = await create(sourceUrl);
    expect(accepted.status).toBe(202);
    const op = await stack.waitForOperation(accepted.body.operation.id, 'failed');
    expect(op.error).toMatchObject({ code });
    const transfer = await getTransfer(accepted.body.transfer.id);
    expect(transfer).toMatchObject({
      status: 'failed',
      error: { code },
      checksumSha256: null,
      mediaId: null,
    });
    expect(await stack.readObject(transfer.objectKey)).toBeNull();
    return transfer;
  }

  it('refuses redirects to a non-allowlisted port on 127.0.0.1 and to 169.254.169.254, without reaching them', async () => {
    const redirect = (to: string) => `${stack.sim.url}/platform/v1/redirect?to=${encodeURIComponent(to)}`;
    await failedWith(redirect(`http://127.0.0.1:${internalPort}/secret-64x64.png`), 'SOURCE_NOT_ALLOWED');
    await failedWith(redirect('http://169.254.169.254/latest/meta-data/iam/x.png'), 'SOURCE_NOT_ALLOWED');
    await failedWith(
      redirect(`http://localhost:${stack.sim.port}/platform/v1/media/a-8x8.png`),
      'SOURCE_NOT_ALLOWED',
    );
    expect(internalHits).toBe(0);
    expect(stack.sim.state.counters.redirects).toBeGreaterThanOrEqual(3);
  });

  it('follows an allowlisted redirect but no more than MATERIAL_MAX_REDIRECTS', async () => {
    const target = media('hop-16x16.png');
    const once = `${stack.sim.url}/platform/v1/redirect?to=${encodeURIComponent(target)}`;
    const accepted = await create(once);
    await stack.waitForOperation(accepted.body.operation.id);
    expect(await getTransfer(accepted.body.transfer.id)).toMatchObject({ status: 'succeeded', width: 16 });

    let chain = media('chain-16x16.png');
    for (let i = 0; i < 3; i++)
      chain = `${stack.sim.url}/platform/v1/redirect?to=${encodeURIComponent(chain)}`;
    await failedWith(chain, 'SOURCE_NOT_ALLOWED');
  });

  it('refuses bytes that are not the declared image type, and oversize sources', async () => {
    const failed = await failedWith(`${media('wrong-32x32.png')}?as=image/jpeg`, 'MEDIA_TYPE_MISMATCH');
    // A failed transfer does not hold its source: sending it again is a new transfer (sql/016).
    const again = await create(`${media('wrong-32x32.png')}?as=image/jpeg`);
    expect(again.status).toBe(202);
    expect(again.body.transfer.id).not.toBe(failed.id);
    await stack.waitForOperation(again.body.operation.id, 'failed');
    await failedWith(`${media('page-32x32.png')}?as=text/html`, 'MEDIA_TYPE_MISMATCH');
    await failedWith(`${media('huge-512x512.png')}?noise=1`, 'MEDIA_TOO_LARGE');
  });

  it('refuses a source that is not allowlisted at once (422), creating nothing', async () => {
    for (const url of [
      `http://127.0.0.1:${internalPort}/x.png`,
      'http://169.254.169.254/latest/meta-data/',
      'file:///etc/passwd',
      `http://user:pw@127.0.0.1:${stack.sim.port}/platform/v1/media/a-8x8.png`,
    ]) {
      const res = await create(url);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ code: 'SOURCE_NOT_ALLOWED' });
    }
    expect(internalHits).toBe(0);
  });

  it('never stores or logs the presigned query: events, idempotency records, operations, logs, responses', async () => {
    expect(secrets.length).toBeGreaterThan(0);
    const { rows } = await t.owner.query(`
      select payload::text || coalesce(last_error, '') as text from outbox_events
      union all select coalesce(response_envelope::text, '') || operation from idempotency_requests
      union all select coalesce(error_code, '') || coalesce(error_message, '') from operations
      union all select coalesce(error_message, '') || source_key from material_transfers
      union all select filename from media`);
    const transcript = stack.client.transcript.join('\n') + stack.logs();
    for (const secret of secrets) {
      expect(rows.filter((r: { text: string }) => r.text.includes(secret))).toEqual([]);
      expect(transcript.includes(secret)).toBe(false);
    }
    // The full URL is kept only in the transfer row, for the worker.
    const kept = await t.owner.query(
      `select count(*)::int as n from material_transfers where source_url like $1`,
      [`%${secrets[0]}%`],
    );
    expect(kept.rows[0].n).toBe(1);
  });
});
