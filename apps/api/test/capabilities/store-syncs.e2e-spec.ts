import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { waitUntil } from '../outbox/processes';
import { CapabilityStack, type OperationBody } from './stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

interface SyncBody {
  sync: { id: string; storeId: string; status: string; pages: number; itemsSynced: number };
  operation: OperationBody;
}

/** Full sync of a store's online products over HTTP with real processes. */
describe('capability: full sync of a store (real processes)', () => {
  const stack = new CapabilityStack(t);
  const secrets: string[] = [];
  let store: { id: string; storeExternalId: string };

  beforeAll(async () => {
    await stack.start();
    store = await stack.activeStore(secrets);
    await stack.admin.seedProducts(store.storeExternalId, 250, 'Seeded');
  });
  afterAll(() => stack.stop());

  const startSync = (key = randomUUID()) =>
    stack.client.post<SyncBody>(stack.ws('/store-syncs'), { storeId: store.id }, { key });
  const storeProducts = async () =>
    (await t.owner.query(`select count(*)::int as n from store_products where store_id = $1`, [store.id]))
      .rows[0].n as number;

  it('syncs every online product (paged, upserted); one active sync per store → 409 SYNC_ALREADY_ACTIVE, allowed again once it finished; replay and forced redelivery change nothing', async () => {
    // Slow listing pages keep the first sync active long enough to collide with.
    await stack.admin.setFaults({ latencyMs: 800, routes: ['GET /platform/v1/stores/*/products'] });
    const key = randomUUID();
    const first = await startSync(key);
    expect(first.status).toBe(202);
    expect(first.body.sync).toMatchObject({ status: 'pending', pages: 0, itemsSynced: 0, storeId: store.id });
    expect(first.body.operation).toMatchObject({ status: 'pending', kind: 'store-sync.run' });

    const second = await startSync();
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'SYNC_ALREADY_ACTIVE', syncId: first.body.sync.id });

    await stack.waitForOperation(first.body.operation.id);
    await stack.admin.clearFaults();
    const done = await stack.client.get<SyncBody['sync']>(stack.ws(`/store-syncs/${first.body.sync.id}`));
    expect(done.body).toMatchObject({ status: 'succeeded', pages: 3, itemsSynced: 250 });
    expect(await storeProducts()).toBe(250);

    const replay = await startSync(key);
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);

    const listCalls = (await stack.admin.counters()).productListCalls;
    const event = await stack.eventFor('syncId', first.body.sync.id);
    expect(await stack.redeliver(event.id, event.queue)).toMatchObject({ result: { outcome: 'skipped' } });
    expect((await stack.admin.counters()).productListCalls).toBe(listCalls);
    expect((await stack.client.get(stack.ws(`/store-syncs/${first.body.sync.id}`))).body).toEqual(done.body);

    // Allowed again once the first finished; upserts keep one row per platform product.
    await stack.admin.seedProducts(store.storeExternalId, 10, 'Later');
    const again = await startSync();
    expect(again.status).toBe(202);
    await stack.waitForOperation(again.body.operation.id);
    expect(await storeProducts()).toBe(260);
    const { rows } = await t.owner.query(
      `select count(distinct last_sync_id)::int as syncs from store_products where store_id = $1`,
      [store.id],
    );
    expect(rows[0].syncs).toBe(1); // every row was seen by the latest sync

    // Products deleted on the marketplace leave the list once a complete sync no longer sees them.
    const gone = (
      await t.owner.query(
        `select platform_product_id as id from store_products where store_id = $1 order by platform_product_id limit 2`,
        [store.id],
      )
    ).rows.map((r) => r.id as string);
    for (const id of gone) await stack.admin.removeProduct(store.storeExternalId, id);
    const third = await startSync();
    await stack.waitForOperation(third.body.operation.id);
    expect(await storeProducts()).toBe(258);
    const left = await t.owner.query(
      `select count(*)::int as n from store_products where store_id = $1 and platform_product_id = any($2)`,
      [store.id, gone],
    );
    expect(left.rows[0].n).toBe(0);

    const list = await stack.client.get<{ items: Array<{ id: string }> }>(stack.ws('/store-syncs'));
    expect(list.body.items.map((s) => s.id)).toEqual([
      third.body.sync.id,
      again.body.sync.id,
      first.body.sync.id,
    ]);
  });

  it("lists the store's synced products page by page (keyset on the platform id); 404 for a store not in the workspace", async () => {
    type Product = { platformProductId: string; title: string; platformStatus: string; lastSyncId: string };
    type Page = { items: Product[]; nextCursor: string | null };
    const seen: Product[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await stack.client.get<Page>(stack.ws(`/stores/${store.id}/products${query}`));
      expect(page.status).toBe(200);
      seen.push(...page.body.items);
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(await storeProducts());
    const ids = seen.map((p) => p.platformProductId);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(seen[0]).toMatchObject({ title: expect.any(String), platformStatus: expect.any(String) });

    const unknown = await stack.client.get(stack.ws(`/stores/${randomUUID()}/products`));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'RESOURCE_NOT_FOUND' });
    const badCursor = await stack.client.get(stack.ws(`/stores/${store.id}/products?cursor=nonsense`));
    expect(badCursor.status).toBe(422);
  });

  it('two concurrent sync requests with different keys: exactly one is accepted', async () => {
    await stack.admin.setFaults({ latencyMs: 500, routes: ['GET /platform/v1/stores/*/products'] });
    const results = await Promise.all([startSync(), startSync(), startSync()]);
    const accepted = results.filter((r) => r.status === 202);
    expect(accepted).toHaveLength(1);
    expect(
      results
        .filter((r) => r.status === 409)
        .every((r) => (r.body as { code?: string }).code === 'SYNC_ALREADY_ACTIVE'),
    ).toBe(true);
    await stack.waitForOperation(accepted[0]!.body.operation.id);
    await stack.admin.clearFaults();
  });

  it('a marketplace that hands back a cursor it already gave: the sync stops (SYNC_CURSOR_LOOP) instead of looping', async () => {
    await stack.admin.setCursorLoop(store.storeExternalId, true);
    try {
      const before = (await stack.admin.counters()).productListCalls;
      const res = await startSync();
      expect(res.status).toBe(202);
      const op = await stack.waitForOperation(res.body.operation.id, 'failed');
      expect(op.error?.code).toBe('SYNC_CURSOR_LOOP');
      // Page 1, then page 1 again (its cursor seen before): two calls, no more.
      expect((await stack.admin.counters()).productListCalls - before).toBe(2);
      const sync = await stack.client.get<SyncBody['sync']>(stack.ws(`/store-syncs/${res.body.sync.id}`));
      expect(sync.body.status).toBe('failed');
    } finally {
      await stack.admin.setCursorLoop(store.storeExternalId, false);
    }
  });

  it('a dead-lettered sync: the worker fails its operation and sync (TASK_ABANDONED), and the store can be synced again', async () => {
    await stack.stopWorker();
    const first = await startSync();
    expect(first.status).toBe(202);
    const event = await waitUntil('the sync event to be dispatched', async () => {
      const e = await stack.eventFor('syncId', first.body.sync.id);
      return e.status === 'dispatched' ? e : undefined;
    });
    // The state every dead-letter path leaves (dispatcher, last attempt, stall loop, sweep): the
    // event is a dead letter and no job will run it.
    await stack.queue(event.queue).remove(event.id);
    await t.owner.query(
      `update outbox_events set status = 'dead_letter', last_error = 'gave up' where id = $1`,
      [event.id],
    );
    expect((await startSync()).status).toBe(409); // the abandoned sync still holds the store

    await stack.startWorker(); // reacts to dead letters at start
    const op = await stack.waitForOperation(first.body.operation.id, 'failed');
    expect(op.error).toEqual({
      code: 'TASK_ABANDONED',
      message: 'the task failed repeatedly and was stopped; start it again',
    });
    const sync = await stack.client.get<SyncBody['sync']>(stack.ws(`/store-syncs/${first.body.sync.id}`));
    expect(sync.body.status).toBe('failed');
    const handled = await t.owner.query(`select dead_letter_handled_at from outbox_events where id = $1`, [
      event.id,
    ]);
    expect(handled.rows[0].dead_letter_handled_at).not.toBeNull();

    const next = await startSync();
    expect(next.status).toBe(202);
    await stack.waitForOperation(next.body.operation.id);
  });

  it('leaves no credential value in events, idempotency rows, audit, logs or responses', async () => {
    await stack.assertNoSecrets(secrets);
  });
});
