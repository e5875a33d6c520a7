import { randomUUID } from 'node:crypto';
import { CommitCuttingProxy, freeTcpPort, useTestDatabase, type CommitCut } from '@listing/testing';
import { CapabilityStack, type OperationBody } from '../capabilities/stack';
import { ApiClient } from '../support/api-client';

const t = useTestDatabase();
jest.setTimeout(120_000);

interface Accepted {
  publication: { id: string };
  operation: OperationBody;
}

/**
 * Network commit ambiguity (the design document's unproven case): the connection to PostgreSQL
 * is lost after COMMIT was sent and before its answer arrived. A protocol-aware proxy cuts one
 * chosen transaction exactly there, or just before the COMMIT. Whether or not the COMMIT landed,
 * the retry under the same key ends with exactly one publication, one outbox event and one
 * product at the marketplace; the same for the worker's own settling commit.
 */
describe('commit ambiguity: a connection lost at COMMIT (real processes, protocol-aware proxy)', () => {
  const stack = new CapabilityStack(t);
  let proxy: CommitCuttingProxy;
  let cutApi: ApiClient;
  let store: { id: string };

  beforeAll(async () => {
    await stack.start();
    const server = new URL(t.info.appUrl);
    proxy = new CommitCuttingProxy(await freeTcpPort(), { host: server.hostname, port: Number(server.port) });
    await proxy.open();
    const { url } = await stack.spawnApi('api-via-proxy', { DATABASE_URL: proxy.urlThrough(t.info.appUrl) });
    cutApi = new ApiClient(url, stack.user.accessToken);
    store = await stack.activeStore();
  });
  afterAll(async () => {
    await stack.stop();
    await proxy?.close();
  });

  /** What one publication left behind: its rows, its events, its products at the marketplace. */
  async function effectsOf(draftId: string) {
    const { rows } = await t.owner.query<{ id: string; status: string }>(
      `select id, status from publications where draft_id = $1`,
      [draftId],
    );
    const events = await t.owner.query(`select id from outbox_events where payload->>'publicationId' = $1`, [
      rows[0]?.id ?? '00000000-0000-0000-0000-000000000000',
    ]);
    const counters = await stack.admin.counters();
    const products = rows[0] ? (counters.productCreateCallsByKey[`publication-${rows[0].id}`] ?? 0) : 0;
    return { publications: rows, events: events.rowCount, productKeyCalls: products, counters };
  }

  it.each<[CommitCut, boolean]>([
    ['after-commit', true],
    ['before-commit', false],
  ])(
    'the API: cut %s → 503; the retry with the same key replays=%s; one of everything',
    async (cut, landed) => {
      const draft = await stack.draft();
      const body = { draftId: draft.id, revision: draft.revision, storeId: store.id };
      const key = randomUUID();
      const before = await stack.admin.counters();
      const cutDone = proxy.arm(cut, (tx) => /insert into publications/i.test(tx));

      const first = await cutApi.post<Accepted>(stack.ws('/publications'), body, { key });
      expect((await cutDone).cut).toBe(cut);
      expect(first.status).toBe(503);
      expect(first.headers.get('content-type')).toMatch(/application\/problem\+json/);
      // Whether it landed is the database's to say: the client cannot tell from the answer.
      const afterCut = await effectsOf(draft.id);
      expect(afterCut.publications).toHaveLength(landed ? 1 : 0);

      const retry = await cutApi.post<Accepted>(stack.ws('/publications'), body, { key });
      expect(retry.status).toBe(202);
      expect(retry.headers.get('idempotent-replayed')).toBe(landed ? 'true' : null);
      await stack.waitForOperation(retry.body.operation.id);

      const effects = await effectsOf(draft.id);
      expect(effects.publications).toEqual([{ id: retry.body.publication.id, status: 'published' }]);
      expect(effects.events).toBe(1);
      expect(effects.counters.productsCreated - before.productsCreated).toBe(1);
      expect(effects.productKeyCalls).toBe(1);
    },
  );

  it.each<[CommitCut]>([['after-commit'], ['before-commit']])(
    "the worker's settle: cut %s → redelivered; one product, the publication published once",
    async (cut) => {
      await stack.stopWorker();
      await stack.startWorker({ DATABASE_URL: proxy.urlThrough(t.info.appUrl) });
      try {
        const draft = await stack.draft();
        const before = await stack.admin.counters();
        const cutDone = proxy.arm(cut, (tx) => /update publications set status = 'published'/i.test(tx));
        const accepted = await stack.client.post<Accepted>(
          stack.ws('/publications'),
          { draftId: draft.id, revision: draft.revision, storeId: store.id },
          { key: randomUUID() },
        );
        expect(accepted.status).toBe(202);
        expect((await cutDone).cut).toBe(cut);
        await stack.waitForOperation(accepted.body.operation.id);

        const effects = await effectsOf(draft.id);
        expect(effects.publications).toEqual([{ id: accepted.body.publication.id, status: 'published' }]);
        expect(effects.events).toBe(1);
        expect(effects.counters.productsCreated - before.productsCreated).toBe(1);
        // Before the commit: the settle was rolled back, so the create was sent again and
        // answered from the provider key; after it: the redelivery found it published.
        expect(effects.productKeyCalls).toBe(cut === 'before-commit' ? 2 : 1);
        const audit = await t.owner.query(
          `select count(*)::int as n from audit_events where action = 'PUBLICATION_PUBLISHED' and entity_id = $1`,
          [accepted.body.publication.id],
        );
        expect(audit.rows[0].n).toBe(1);
      } finally {
        await stack.stopWorker();
        await stack.startWorker();
      }
    },
  );
});
