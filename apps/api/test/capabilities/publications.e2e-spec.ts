import { randomUUID } from 'node:crypto';
import { idleTransactions, useTestDatabase } from '@listing/testing';
import { waitUntil } from '../outbox/processes';
import { CapabilityStack, credentials, type OperationBody } from './stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

interface PublicationBody {
  publication: {
    id: string;
    status: string;
    platformProductId: string | null;
    storeId: string;
    draftId: string;
  };
  operation: OperationBody;
}

/** First publish over HTTP with real api, dispatcher, worker and platform-sim processes. */
describe('capability: first publication of a product draft (real processes)', () => {
  const stack = new CapabilityStack(t);
  const secrets: string[] = [];
  let store: { id: string; storeExternalId: string };

  beforeAll(async () => {
    await stack.start();
    store = await stack.activeStore(secrets);
  });
  afterAll(() => stack.stop());

  const publish = (body: Record<string, unknown>, key = randomUUID()) =>
    stack.client.post<PublicationBody>(stack.ws('/publications'), body, { key });
  const key = (publicationId: string) => `publication-${publicationId}`;

  it('publishes (202 → succeeded, one product at the platform), replays the first body exactly, and a forced redelivery creates no second product', async () => {
    const draft = await stack.draft({ title: 'Blue mug', description: 'A mug' });
    const idemKey = randomUUID();
    const body = { draftId: draft.id, revision: draft.revision, storeId: store.id };
    const first = await publish(body, idemKey);
    expect(first.status).toBe(202);
    expect(first.body.publication).toMatchObject({
      status: 'pending',
      platformProductId: null,
      draftId: draft.id,
    });
    expect(first.body.operation).toMatchObject({ status: 'pending', kind: 'publication.publish' });

    await stack.waitForOperation(first.body.operation.id);
    const pub = await stack.client.get<PublicationBody['publication']>(
      stack.ws(`/publications/${first.body.publication.id}`),
    );
    expect(pub.body.status).toBe('published');
    const counters = await stack.admin.countersFor(key(pub.body.id));
    expect(counters).toMatchObject({ productCreateCalls: 1, productId: pub.body.platformProductId });

    const replay = await publish(body, idemKey);
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);

    const event = await stack.eventFor('publicationId', pub.body.id);
    expect(await stack.redeliver(event.id, event.queue)).toMatchObject({ result: { outcome: 'skipped' } });
    expect(await stack.admin.countersFor(key(pub.body.id))).toMatchObject({ productCreateCalls: 1 });
    const all = await stack.admin.counters();
    expect(all.productsByKey[key(pub.body.id)]).toBe(pub.body.platformProductId);
    expect((await stack.client.get(stack.ws(`/publications/${pub.body.id}`))).body).toEqual(pub.body);

    const list = await stack.client.get<{ items: Array<{ id: string }> }>(stack.ws('/publications'));
    expect(list.body.items.map((p) => p.id)).toContain(pub.body.id);
  });

  it('a draft is first-published to a store once: another key → 409 ALREADY_PUBLISHED', async () => {
    const draft = await stack.draft();
    const body = { draftId: draft.id, revision: draft.revision, storeId: store.id };
    const first = await publish(body);
    expect(first.status).toBe(202);
    const second = await publish(body);
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'ALREADY_PUBLISHED' });
    await stack.waitForOperation(first.body.operation.id);
    const third = await publish(body);
    expect(third.status).toBe(409);
    const { rows } = await t.owner.query(`select count(*)::int as n from publications where draft_id = $1`, [
      draft.id,
    ]);
    expect(rows[0].n).toBe(1);
  });

  it('the platform applies the create and drops the response: the retry with the same provider key returns the same product, never a second one', async () => {
    const draft = await stack.draft({ title: 'Dropped response' });
    await stack.admin.setFaults({ dropResponseRate: 1, routes: ['POST /platform/v1/stores/*/products'] });
    const res = await publish({ draftId: draft.id, revision: draft.revision, storeId: store.id });
    expect(res.status).toBe(202);
    const pubKey = key(res.body.publication.id);
    await waitUntil(
      'the create to be applied at the platform',
      async () => (await stack.admin.countersFor(pubKey)).productId,
    );
    const op = await stack.client.get<OperationBody>(stack.ws(`/operations/${res.body.operation.id}`));
    expect(op.body.status).toBe('running'); // the dropped response is a transient failure: retried
    await stack.admin.clearFaults();
    await stack.waitForOperation(res.body.operation.id);

    const counters = await stack.admin.countersFor(pubKey);
    expect(counters.productCreateCalls).toBeGreaterThanOrEqual(2);
    const pub = await stack.client.get<PublicationBody['publication']>(
      stack.ws(`/publications/${res.body.publication.id}`),
    );
    expect(pub.body.platformProductId).toBe(counters.productId);
    // Exactly one product at the platform per publication of this store.
    const { rows } = await t.owner.query(`select count(*)::int as n from publications where store_id = $1`, [
      store.id,
    ]);
    const all = await stack.admin.counters();
    const storeKeys = Object.keys(all.productsByKey).filter((k) => k.startsWith('publication-'));
    expect(storeKeys).toHaveLength(rows[0].n);
    expect(all.productsCreated).toBe(rows[0].n);
  });

  it('the marketplace never confirms the create: outcome_unknown keeps the slot (no second product), and a retry settles it with the same provider key', async () => {
    const draft = await stack.draft({ title: 'Never confirmed' });
    const body = { draftId: draft.id, revision: draft.revision, storeId: store.id };
    await stack.restartDispatcher({ OUTBOX_HANDLER_BACKOFF_MS: '1' }); // all attempts in about a second
    await stack.admin.setFaults({ dropResponseRate: 1, routes: ['POST /platform/v1/stores/*/products'] });
    let publicationId: string;
    try {
      const res = await publish(body);
      expect(res.status).toBe(202);
      publicationId = res.body.publication.id;
      const op = await stack.waitForOperation(res.body.operation.id, 'failed');
      expect(op.error?.code).toBe('PUBLICATION_OUTCOME_UNKNOWN');
    } finally {
      await stack.admin.clearFaults();
      await stack.restartDispatcher();
    }
    const pubKey = key(publicationId);
    const made = await stack.admin.countersFor(pubKey);
    expect(made.productId).toEqual(expect.any(String)); // the marketplace did create it
    const pub = await stack.client.get<PublicationBody['publication']>(
      stack.ws(`/publications/${publicationId}`),
    );
    expect(pub.body).toMatchObject({ status: 'outcome_unknown', platformProductId: null });

    // A new publication of the same draft to the same store would create a second product: refused.
    const again = await publish(body);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      code: 'ALREADY_PUBLISHED',
      publicationId,
      publicationStatus: 'outcome_unknown',
    });

    // The retry sends the same create again; the marketplace answers with the product it made.
    const retryKey = randomUUID();
    const retry = await stack.client.post<PublicationBody>(
      stack.ws(`/publications/${publicationId}/retry`),
      {},
      { key: retryKey },
    );
    expect(retry.status).toBe(202);
    expect(retry.body.publication.id).toBe(publicationId);
    await stack.waitForOperation(retry.body.operation.id);
    const settled = await stack.client.get<PublicationBody['publication']>(
      stack.ws(`/publications/${publicationId}`),
    );
    expect(settled.body).toMatchObject({ status: 'published', platformProductId: made.productId });
    const after = await stack.admin.countersFor(pubKey);
    expect(after.productId).toBe(made.productId);
    const all = await stack.admin.counters();
    expect(Object.values(all.productsByKey).filter((id) => id === made.productId)).toHaveLength(1);

    // The retry replays; a published publication cannot be retried.
    const replay = await stack.client.post<PublicationBody>(
      stack.ws(`/publications/${publicationId}/retry`),
      {},
      { key: retryKey },
    );
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(retry.body);
    const late = await stack.client.post(
      stack.ws(`/publications/${publicationId}/retry`),
      {},
      { key: randomUUID() },
    );
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: 'PUBLICATION_NOT_RETRYABLE', publicationStatus: 'published' });
  });

  it('a dead-lettered publish after a delivery reached publishing: outcome_unknown, then the retry publishes it', async () => {
    const draft = await stack.draft({ title: 'Abandoned mid-flight' });
    await stack.stopWorker();
    const res = await publish({ draftId: draft.id, revision: draft.revision, storeId: store.id });
    expect(res.status).toBe(202);
    const publicationId = res.body.publication.id;
    const event = await waitUntil('the publish event to be dispatched', async () => {
      const e = await stack.eventFor('publicationId', publicationId);
      return e.status === 'dispatched' ? e : undefined;
    });
    // What a worker that kept dying after marking the publication 'publishing' leaves behind,
    // once the outbox gave up: the create may have been sent.
    await stack.queue(event.queue).remove(event.id);
    await t.owner.query(`update publications set status = 'publishing' where id = $1`, [publicationId]);
    await t.owner.query(
      `update outbox_events set status = 'dead_letter', last_error = 'gave up' where id = $1`,
      [event.id],
    );
    await stack.startWorker();
    const op = await stack.waitForOperation(res.body.operation.id, 'failed');
    expect(op.error?.code).toBe('PUBLICATION_OUTCOME_UNKNOWN');
    const pub = await stack.client.get<PublicationBody['publication']>(
      stack.ws(`/publications/${publicationId}`),
    );
    expect(pub.body.status).toBe('outcome_unknown');

    const retry = await stack.client.post<PublicationBody>(
      stack.ws(`/publications/${publicationId}/retry`),
      {},
      { key: randomUUID() },
    );
    expect(retry.status).toBe(202);
    await stack.waitForOperation(retry.body.operation.id);
    const counters = await stack.admin.countersFor(key(publicationId));
    expect(counters.productCreateCalls).toBe(1);
    expect(
      (await stack.client.get<PublicationBody['publication']>(stack.ws(`/publications/${publicationId}`)))
        .body,
    ).toMatchObject({ status: 'published', platformProductId: counters.productId });
  });

  it('a dead-letter reaction racing a delivery that is moving the publication to publishing: outcome_unknown, never failed', async () => {
    const draft = await stack.draft({ title: 'Raced' });
    await stack.stopWorker();
    const res = await publish({ draftId: draft.id, revision: draft.revision, storeId: store.id });
    const publicationId = res.body.publication.id;
    const event = await waitUntil('the publish event to be dispatched', async () => {
      const e = await stack.eventFor('publicationId', publicationId);
      return e.status === 'dispatched' ? e : undefined;
    });
    await stack.queue(event.queue).remove(event.id);
    await t.owner.query(`update outbox_events set status = 'dead_letter' where id = $1`, [event.id]);
    // Another delivery of the event (a stalled copy) is committing pending → publishing right now.
    const delivery = await t.owner.connect();
    try {
      await delivery.query('begin');
      await delivery.query(`update publications set status = 'publishing' where id = $1`, [publicationId]);
      await stack.startWorker(); // its reaction runs at start, and waits on that row
      await waitUntil('the reaction to wait on the publication row', async () => {
        const { rows } = await t.owner.query(
          // A row wait is a wait on the other transaction's id (a lock with no database).
          `select 1 from pg_locks w where not w.granted
              and w.pid in (select pid from pg_locks where database = (select oid from pg_database where datname = current_database()))`,
        );
        return rows.length > 0 || undefined;
      });
      await delivery.query('commit');
    } finally {
      delivery.release();
    }
    const op = await stack.waitForOperation(res.body.operation.id, 'failed');
    expect(op.error?.code).toBe('PUBLICATION_OUTCOME_UNKNOWN');
    expect(
      (await t.owner.query(`select status from publications where id = $1`, [publicationId])).rows[0],
    ).toEqual({
      status: 'outcome_unknown',
    });
  });

  it('a refusal of a first-ever create frees the slot (failed); after an earlier send it proves nothing (outcome_unknown)', async () => {
    // A store whose key the marketplace refuses while we still hold it active (rotated by the merchant).
    const bad = credentials('rotated', false);
    secrets.push(bad.apiKey, bad.apiSecret);
    const created = await stack.client.post<{ store: { id: string }; operation: { id: string } }>(
      stack.ws('/stores'),
      { platform: 'sim', storeExternalId: `shop-${randomUUID()}`, ...bad },
      { key: randomUUID() },
    );
    await stack.waitForOperation(created.body.operation.id, 'failed');
    const rotated = created.body.store.id;
    await t.owner.query(`update stores set status = 'active' where id = $1`, [rotated]);

    const first = await stack.draft();
    const p1 = await publish({ draftId: first.id, revision: first.revision, storeId: rotated });
    expect((await stack.waitForOperation(p1.body.operation.id, 'failed')).error?.code).toBe(
      'PUBLICATION_REJECTED',
    );
    expect(
      (await t.owner.query(`select status from publications where id = $1`, [p1.body.publication.id]))
        .rows[0],
    ).toEqual({ status: 'failed' });

    await stack.stopWorker();
    const second = await stack.draft();
    const p2 = await publish({ draftId: second.id, revision: second.revision, storeId: rotated });
    // As an earlier delivery leaves it after sending a create whose answer it never got.
    await t.owner.query(`update publications set status = 'publishing' where id = $1`, [
      p2.body.publication.id,
    ]);
    await stack.startWorker();
    const op = await stack.waitForOperation(p2.body.operation.id, 'failed');
    expect(op.error?.code).toBe('PUBLICATION_OUTCOME_UNKNOWN');
    expect(
      (await t.owner.query(`select status from publications where id = $1`, [p2.body.publication.id]))
        .rows[0],
    ).toEqual({ status: 'outcome_unknown' });
  });

  it('holds no transaction while the marketplace call is in flight', async () => {
    const draft = await stack.draft({ title: 'Slow marketplace' });
    await stack.admin.setFaults({ latencyMs: 1500, routes: ['POST /platform/v1/stores/*/products'] });
    try {
      const res = await publish({ draftId: draft.id, revision: draft.revision, storeId: store.id });
      expect(res.status).toBe(202);
      await waitUntil(
        'the publication to be publishing',
        async () =>
          (await t.owner.query(`select status from publications where id = $1`, [res.body.publication.id]))
            .rows[0]?.status === 'publishing',
      );
      await new Promise((r) => setTimeout(r, 600)); // well inside the 1.5 s call
      expect(await idleTransactions(t.info, 300)).toEqual([]);
      await stack.waitForOperation(res.body.operation.id);
    } finally {
      await stack.admin.clearFaults();
    }
  });

  it('refuses an unknown revision (404) and a request without Idempotency-Key (400)', async () => {
    const draft = await stack.draft();
    const unknownRevision = await publish({ draftId: draft.id, revision: 7, storeId: store.id });
    expect(unknownRevision.status).toBe(404);
    const missingKey = await stack.client.post(stack.ws('/publications'), {
      draftId: draft.id,
      revision: 1,
      storeId: store.id,
    });
    expect(missingKey.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REQUIRED' });
  });

  it('refuses to publish to a store that is not active: 409 STORE_NOT_ACTIVE, nothing written, nothing sent', async () => {
    const bad = credentials('inactive', false);
    secrets.push(bad.apiKey, bad.apiSecret);
    const created = await stack.client.post<{ store: { id: string }; operation: { id: string } }>(
      stack.ws('/stores'),
      { platform: 'sim', storeExternalId: `shop-${randomUUID()}`, ...bad },
      { key: randomUUID() },
    );
    expect(created.status).toBe(202);
    const op = await stack.waitForOperation(created.body.operation.id, 'failed');
    expect(op.error).toMatchObject({ code: 'STORE_CREDENTIALS_INVALID' });

    const draft = await stack.draft();
    const before = await stack.admin.counters();
    const written = async () =>
      (
        await t.owner.query(
          `select (select count(*)::int from publications) as publications,
                  (select count(*)::int from operations where kind = 'publication.publish') as operations,
                  (select count(*)::int from outbox_events where queue = 'publications') as events`,
        )
      ).rows[0];
    const rowsBefore = await written();
    const refused = await publish({
      draftId: draft.id,
      revision: draft.revision,
      storeId: created.body.store.id,
    });
    expect(refused.status).toBe(409);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ code: 'STORE_NOT_ACTIVE' });
    expect(await written()).toEqual(rowsBefore);
    expect((await stack.admin.counters()).productsCreated).toBe(before.productsCreated);
  });

  it('leaves no credential value in events, idempotency rows, audit, logs or responses', async () => {
    await stack.assertNoSecrets(secrets);
  });
});
