import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { SimAdminClient, type SimProduct } from '@listing/platform-sim';
import { waitUntil } from '../outbox/processes';
import { MediaStack, type OperationBody } from '../media/media-stack';
import { registerUser } from '../support/api-client';

const t = useTestDatabase();
jest.setTimeout(120_000);

interface Publication {
  id: string;
  status: string;
  revision: number;
  liveRevision: number | null;
  platformProductId: string | null;
}
interface Update {
  id: string;
  publicationId: string;
  revision: number;
  status: string;
  errorCode: string | null;
  appliedAt: string | null;
}
/**
 * Product updates: a newer revision of a live draft updates its product, in revision order per
 * product, whatever order the events reach the worker in (real processes, counted at the
 * simulator).
 */
describe('publication updates (real processes)', () => {
  const stack = new MediaStack(t);
  let admin: SimAdminClient;
  let store: { id: string; storeExternalId: string };
  const apiKey = `valid-${randomUUID()}`;

  beforeAll(async () => {
    await stack.start();
    admin = new SimAdminClient(stack.sim.url);
    store = await stack.connectSimStore(apiKey);
  });
  afterAll(() => stack.stop());

  const simProduct = async (productId: string): Promise<SimProduct> => {
    const res = await stack.simStoreGet(store, apiKey, `/products/${productId}`);
    expect(res.status).toBe(200);
    return (await res.json()) as SimProduct;
  };
  const getPublication = async (id: string) =>
    (await stack.client.get<Publication>(stack.ws(`/publications/${id}`))).body;

  /** A new revision of the draft: `title` and a colour, by PATCH with If-Match. */
  async function edit(draftId: string, revision: number, title: string, color: string): Promise<number> {
    const res = await stack.client.request<{ revision: number }>(
      'PATCH',
      stack.ws(`/product-drafts/${draftId}`),
      {
        body: { title, attributes: { color } },
        headers: { 'if-match': `"${revision}"` },
        key: randomUUID(),
      },
    );
    expect(res.status).toBe(200);
    return res.body.revision;
  }

  const requestUpdate = (publicationId: string, revision: number) =>
    stack.client.post<{ update: Update; operation: OperationBody }>(
      stack.ws(`/publications/${publicationId}/updates`),
      { revision },
      { key: randomUUID() },
    );

  async function livePublication(title: string): Promise<{ draftId: string; publication: Publication }> {
    const draft = await stack.client.post<{ id: string; revision: number }>(
      stack.ws('/product-drafts'),
      { title, attributes: { color: 'blue' } },
      { key: randomUUID() },
    );
    const published = await stack.client.post<{ publication: { id: string }; operation: OperationBody }>(
      stack.ws('/publications'),
      { draftId: draft.body.id, revision: draft.body.revision, storeId: store.id },
      { key: randomUUID() },
    );
    await stack.waitForOperation(published.body.operation.id);
    const publication = await getPublication(published.body.publication.id);
    expect(publication).toMatchObject({ status: 'published', revision: 1, liveRevision: 1 });
    return { draftId: draft.body.id, publication };
  }

  it('pushes a newer revision to the product; a redelivered update and an older one change nothing', async () => {
    const { draftId, publication } = await livePublication('Mug v1');
    const productId = publication.platformProductId!;
    const before = await admin.counters();

    // A draft already live cannot be first-published again: the answer names the publication.
    const again = await stack.client.post(
      stack.ws('/publications'),
      { draftId, revision: 1, storeId: store.id },
      { key: randomUUID() },
    );
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'ALREADY_PUBLISHED', publicationId: publication.id });

    const r2 = await edit(draftId, 1, 'Mug v2', 'red');
    const key = randomUUID();
    const accepted = await stack.client.post<{ update: Update; operation: OperationBody }>(
      stack.ws(`/publications/${publication.id}/updates`),
      { revision: r2 },
      { key },
    );
    expect(accepted.status).toBe(202);
    expect(accepted.body.update).toMatchObject({ revision: 2, status: 'pending', appliedAt: null });
    await stack.waitForOperation(accepted.body.operation.id);
    expect(await getPublication(publication.id)).toMatchObject({ liveRevision: 2, revision: 1 });
    expect(await simProduct(productId)).toMatchObject({
      title: 'Mug v2',
      attributes: { color: 'red' },
      version: 2,
    });

    // The replay answers the first 202 exactly, though the update has been applied since.
    const replay = await stack.client.post<{ update: Update }>(
      stack.ws(`/publications/${publication.id}/updates`),
      { revision: r2 },
      { key },
    );
    expect(replay.status).toBe(202);
    expect(replay.text).toBe(accepted.text);

    const r3 = await edit(draftId, r2, 'Mug v3', 'green');
    const third = await requestUpdate(publication.id, r3);
    await stack.waitForOperation(third.body.operation.id);
    expect(await getPublication(publication.id)).toMatchObject({ liveRevision: 3 });

    // The event of revision 2 delivered again: skipped, the marketplace is not called.
    const event = await stack.eventFor('updateId', accepted.body.update.id);
    const redelivered = await stack.redeliver(event.id, event.queue);
    expect(redelivered.result).toMatchObject({ outcome: 'skipped' });
    const product = await simProduct(productId);
    expect(product).toMatchObject({ title: 'Mug v3', attributes: { color: 'green' }, version: 3 });
    const after = await admin.counters();
    expect(after.productsUpdated - before.productsUpdated).toBe(2);
    expect(after.updatesByProduct[productId]).toBe(2);

    // Backwards or sideways is refused before anything is written.
    for (const revision of [r2, r3]) {
      const refused = await requestUpdate(publication.id, revision);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ code: 'REVISION_NOT_NEWER', newestRevision: 3 });
    }
    const missing = await requestUpdate(publication.id, 99);
    expect(missing.status).toBe(404);

    // The updates, newest first, paged.
    const page1 = await stack.client.get<{ items: Update[]; nextCursor: string | null }>(
      stack.ws(`/publications/${publication.id}/updates?limit=1`),
    );
    expect(page1.body.items.map((u) => [u.revision, u.status])).toEqual([[3, 'applied']]);
    const page2 = await stack.client.get<{ items: Update[]; nextCursor: string | null }>(
      stack.ws(`/publications/${publication.id}/updates?limit=1&cursor=${page1.body.nextCursor}`),
    );
    expect(page2.body.items.map((u) => [u.revision, u.status])).toEqual([[2, 'applied']]);
    expect(page2.body.nextCursor).toBeNull();
    const one = await stack.client.get<Update>(
      stack.ws(`/publications/${publication.id}/updates/${accepted.body.update.id}`),
    );
    expect(one.body).toMatchObject({ revision: 2, status: 'applied' });
    expect(one.body.appliedAt).not.toBeNull();
  });

  /**
   * Requests updates of `revisions` while the publications queue is paused, takes the job of
   * `held` out of the queue and resumes: every other job runs, and `held`'s event is delivered
   * late (put back to pending for the dispatcher) once `first` finished.
   */
  async function deliverLate(publicationId: string, revisions: number[], held: number) {
    const queue = stack.queue('publications');
    await queue.pause();
    const requested = new Map<number, { update: Update; operation: OperationBody; eventId: string }>();
    for (const revision of revisions) {
      const res = await requestUpdate(publicationId, revision);
      expect(res.status).toBe(202);
      const event = await stack.eventFor('updateId', res.body.update.id);
      requested.set(revision, { ...res.body, eventId: event.id });
    }
    for (const { eventId } of requested.values()) {
      await waitUntil('the job to be queued', async () => ((await queue.getJob(eventId)) ? true : undefined));
    }
    const late = requested.get(held)!;
    expect(await queue.remove(late.eventId)).toBe(1);
    await queue.resume();
    const onTime = [...requested.entries()].filter(([revision]) => revision !== held);
    const results = new Map<number, unknown>();
    for (const [revision, { eventId }] of onTime) {
      const job = await waitUntil('the job to finish', async () => {
        const j = await queue.getJob(eventId);
        return j?.finishedOn ? j : undefined;
      });
      results.set(revision, (job.returnvalue as { result: unknown }).result);
    }
    await t.owner.query(
      `update outbox_events set status = 'pending', next_attempt_at = now(), dispatched_at = null,
              locked_by = null, locked_until = null where id = $1`,
      [late.eventId],
    );
    const job = await waitUntil('the late delivery to finish', async () => {
      const j = await queue.getJob(late.eventId);
      return j?.finishedOn ? j : undefined;
    });
    results.set(held, (job.returnvalue as { result: unknown }).result);
    return { requested, results };
  }

  it('never sends an older update after a newer one, whichever event arrives first', async () => {
    const { draftId, publication } = await livePublication('Jug v1');
    const productId = publication.platformProductId!;
    const r2 = await edit(draftId, 1, 'Jug v2', 'red');
    const r3 = await edit(draftId, r2, 'Jug v3', 'green');
    const before = await admin.counters();

    // Revision 2's event first, while 3 is requested: 2 is superseded at its claim, never sent.
    const first = await deliverLate(publication.id, [r2, r3], r3);
    expect(first.results.get(r2)).toEqual({ outcome: 'superseded', revision: 2 });
    expect(first.results.get(r3)).toEqual({ outcome: 'applied', revision: 3 });
    const superseded = await stack.waitForOperation(first.requested.get(r2)!.operation.id, 'failed');
    expect(superseded.error?.code).toBe('PUBLICATION_UPDATE_SUPERSEDED');
    expect(await getPublication(publication.id)).toMatchObject({ liveRevision: 3 });

    // Revision 5 applied first; 4's event arrives late: 4 was superseded when 5 went live.
    const r4 = await edit(draftId, r3, 'Jug v4', 'black');
    const r5 = await edit(draftId, r4, 'Jug v5', 'white');
    const second = await deliverLate(publication.id, [r4, r5], r4);
    expect(second.results.get(r5)).toEqual({ outcome: 'applied', revision: 5 });
    expect(second.results.get(r4)).toEqual({ outcome: 'skipped' });
    const late = await stack.waitForOperation(second.requested.get(r4)!.operation.id, 'failed');
    expect(late.error?.code).toBe('PUBLICATION_UPDATE_SUPERSEDED');
    const update = await stack.client.get<Update>(
      stack.ws(`/publications/${publication.id}/updates/${second.requested.get(r4)!.update.id}`),
    );
    expect(update.body).toMatchObject({ status: 'superseded', errorCode: 'PUBLICATION_UPDATE_SUPERSEDED' });

    // Counted at the marketplace: only 3 and 5 reached the product.
    const after = await admin.counters();
    expect(after.productsUpdated - before.productsUpdated).toBe(2);
    expect(await simProduct(productId)).toMatchObject({
      title: 'Jug v5',
      attributes: { color: 'white' },
      version: 3,
    });
    expect(await getPublication(publication.id)).toMatchObject({ liveRevision: 5 });
  });

  it('holds a newer update while an older one is in flight, then applies both in order', async () => {
    const { draftId, publication } = await livePublication('Cup v1');
    const productId = publication.platformProductId!;
    const r2 = await edit(draftId, 1, 'Cup v2', 'red');
    const r3 = await edit(draftId, r2, 'Cup v3', 'green');
    const before = await admin.counters();

    // Revision 2's update reaches the marketplace but its answer is lost: it keeps the slot and
    // is retried, while revision 3 is requested and must wait for it.
    await admin.setFaults({ dropResponseRate: 1, routes: ['PUT /platform/v1/stores/*/products/*'] });
    const older = await requestUpdate(publication.id, r2);
    await waitUntil('revision 2 to reach the marketplace', async () =>
      (await admin.counters()).productsUpdated > before.productsUpdated ? true : undefined,
    );
    const newer = await requestUpdate(publication.id, r3);
    expect(newer.status).toBe(202);
    await waitUntil('revision 3 to wait for the slot', async () => {
      const { rows } = await t.owner.query(`select status from publication_updates where id = $1`, [
        newer.body.update.id,
      ]);
      return rows[0]?.status === 'pending' ? true : undefined;
    });
    await admin.clearFaults();
    await stack.waitForOperation(older.body.operation.id);
    await stack.waitForOperation(newer.body.operation.id);

    const after = await admin.counters();
    expect(after.productsUpdated - before.productsUpdated).toBe(2); // 2 then 3, each once
    expect(after.productUpdateReplays - before.productUpdateReplays).toBeGreaterThanOrEqual(1);
    expect(await simProduct(productId)).toMatchObject({ title: 'Cup v3', version: 3 });
    expect(await getPublication(publication.id)).toMatchObject({ liveRevision: 3 });
  });

  it('keeps the order in the database: the live revision never goes back, one slot per product', async () => {
    const { publication } = await livePublication('Plate v1');
    await expect(
      t.owner.query(`update publications set live_revision = 0 where id = $1`, [publication.id]),
    ).rejects.toMatchObject({ code: '23514' });
    await expect(
      t.owner.query(`update publications set live_revision = null where id = $1`, [publication.id]),
    ).rejects.toMatchObject({ code: '23514' });
    // A publication that is not published holds no send slot.
    await expect(
      t.owner.query(
        `update publications set status = 'failed', platform_product_id = null, live_revision = null,
                sending_revision = 2 where id = $1`,
        [publication.id],
      ),
    ).rejects.toMatchObject({ code: '23514' });
  });

  it('refuses an update of a publication that is not live, and hides other workspaces', async () => {
    const unknown = await requestUpdate(randomUUID(), 2);
    expect(unknown.status).toBe(404);
    const { publication } = await livePublication('Bowl v1');
    const stranger = await registerUser(stack.apiUrl);
    const hidden = await stranger.client.get(
      `/v1/workspaces/${stranger.workspaceId}/publications/${publication.id}/updates`,
    );
    expect(hidden.status).toBe(404);
    const foreign = await stack.client.get(
      `/v1/workspaces/${stranger.workspaceId}/publications/${publication.id}/updates`,
    );
    expect(foreign.status).toBe(404);
  });
});
