import { randomUUID } from 'node:crypto';
import { sql } from '@listing/db';
import { useTestDatabase } from '@listing/testing';
import { registerUser, type RegisteredUser } from '../support/api-client';
import { startApi, type InProcessApi } from '../support/in-process-api';

const t = useTestDatabase();

interface Draft {
  id: string;
  revision: number;
  data: Record<string, unknown>;
}
interface Execution {
  record: Draft;
  execution: {
    id: string;
    featureId: string;
    mode: string;
    status: string;
    baseRevision: number;
    resultRevision: number | null;
  };
}

/** The records kernel over HTTP: revisions, If-Match/ETag, feature executions, audit. */
describe('records kernel: product drafts', () => {
  let api: InProcessApi;
  let alice: RegisteredUser;
  const drafts = () => `/v1/workspaces/${alice.workspaceId}/product-drafts`;
  const audit = async (id: string) =>
    (
      await t.owner.query(
        'select action, revision from audit_events where entity_id = $1 order by created_at, action',
        [id],
      )
    ).rows;

  beforeAll(async () => {
    api = await startApi(t.info);
    alice = await registerUser(api.url);
  });
  afterAll(async () => {
    await api?.close();
  });

  const create = async (title = 'A  draft') => {
    const res = await alice.client.post<Draft>(drafts(), {
      title,
      price: { amount: '19.99', currency: 'EUR' },
    });
    expect(res.status).toBe(201);
    return res.body;
  };

  it('PATCH needs If-Match (428), refuses a stale revision (412) and returns the new ETag', async () => {
    const draft = await create();
    const missing = await alice.client.request('PATCH', `${drafts()}/${draft.id}`, { body: { title: 'x' } });
    expect(missing.status).toBe(428);
    expect(missing.body).toMatchObject({ code: 'IF_MATCH_REQUIRED' });

    const ok = await alice.client.request<Draft>('PATCH', `${drafts()}/${draft.id}`, {
      body: { title: 'second' },
      headers: { 'if-match': '"1"' },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('etag')).toBe('"2"');
    expect(ok.body).toMatchObject({
      revision: 2,
      data: { title: 'second', price: { amount: '19.99', currency: 'EUR' } },
    });

    const stale = await alice.client.request('PATCH', `${drafts()}/${draft.id}`, {
      body: { title: 'lost update' },
      headers: { 'if-match': '"1"' },
    });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ code: 'REVISION_MISMATCH', currentRevision: 2 });

    const current = await alice.client.get<Draft>(`${drafts()}/${draft.id}`);
    expect(current.headers.get('etag')).toBe('"2"');
    expect(current.body.data.title).toBe('second');
    const first = await alice.client.get<Draft>(`${drafts()}/${draft.id}/revisions/1`);
    expect(first.body).toMatchObject({ revision: 1, data: { title: 'A  draft' } });
    expect((await alice.client.get(`${drafts()}/${draft.id}/revisions/3`)).status).toBe(404);
    expect(await audit(draft.id)).toEqual([
      { action: 'RECORD_CREATED', revision: 1 },
      { action: 'RECORD_UPDATED', revision: 2 },
    ]);
  });

  it('concurrent PATCHes on one revision: exactly one wins, the others get 412', async () => {
    const draft = await create();
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        alice.client.request('PATCH', `${drafts()}/${draft.id}`, {
          body: { title: `racer ${i}` },
          headers: { 'if-match': '"1"' },
        }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 412)).toHaveLength(7);
    const revisions = await t.owner.query(
      'select count(*)::int as n from record_revisions where record_id = $1',
      [draft.id],
    );
    expect(revisions.rows[0].n).toBe(2);
  });

  it('revisions are immutable, even for the application role', async () => {
    const draft = await create();
    // straight SQL as app_user, inside the draft's workspace
    await expect(
      t.db.withWorkspace(alice.workspaceId, () =>
        t.db.executor.execute(sql`update record_revisions set snapshot = '{}' where record_id = ${draft.id}`),
      ),
    ).rejects.toThrow();
    await expect(
      t.db.withWorkspace(alice.workspaceId, () =>
        t.db.executor.execute(sql`delete from record_revisions where record_id = ${draft.id}`),
      ),
    ).rejects.toThrow();
    const { rows } = await t.owner.query(
      `select snapshot->>'id' as id from record_revisions where record_id = $1`,
      [draft.id],
    );
    expect(rows).toEqual([{ id: draft.id }]);
  });

  it('a local feature produces a new revision and a succeeded execution', async () => {
    const draft = await create('  Spaced    out   title ');
    const res = await alice.client.post<Execution>(
      `${drafts()}/${draft.id}/features/normalize-text/executions`,
      {},
      {
        headers: { 'if-match': '"1"' },
      },
    );
    expect(res.status).toBe(201);
    expect(res.headers.get('etag')).toBe('"2"');
    expect(res.body.record).toMatchObject({ revision: 2, data: { title: 'Spaced out title' } });
    expect(res.body.execution).toMatchObject({
      featureId: 'normalize-text',
      mode: 'local',
      status: 'succeeded',
      baseRevision: 1,
      resultRevision: 2,
    });
    expect((await audit(draft.id)).map((a) => a.action)).toContain('FEATURE_NORMALIZE_TEXT_SUCCEEDED');
  });

  it('a key reused on the feature id spelled otherwise is another request, never a replay', async () => {
    const draft = await create('  Spaced    out   title ');
    const key = randomUUID();
    const run = (feature: string) =>
      alice.client.post<Execution>(
        `${drafts()}/${draft.id}/features/${feature}/executions`,
        {},
        { headers: { 'if-match': '"1"', 'idempotency-key': key } },
      );
    expect((await run('normalize-text')).status).toBe(201);
    // Feature ids are case-sensitive: without that key this is a 404, so it is no replay of the 201.
    const other = await run('NORMALIZE-TEXT');
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_SCOPE_CONFLICT' });
    expect(other.headers.get('idempotent-replayed')).toBeNull();
  });

  it('a feature that declares a direct external call fails closed as blocked_external', async () => {
    const draft = await create('External');
    const key = randomUUID();
    const res = await alice.client.post<Execution>(
      `${drafts()}/${draft.id}/features/publish-direct/executions`,
      {},
      { key },
    );
    expect(res.status).toBe(201);
    expect(res.body.execution).toMatchObject({
      mode: 'blocked_external',
      status: 'blocked',
      baseRevision: 1,
      resultRevision: null,
    });
    expect(res.body.record.revision).toBe(1);
    expect((await alice.client.get<Draft>(`${drafts()}/${draft.id}`)).body.revision).toBe(1);
    expect(await audit(draft.id)).toContainEqual({ action: 'FEATURE_PUBLISH_DIRECT_BLOCKED', revision: 1 });
    const outbox = await t.owner.query(
      'select count(*)::int as n from outbox_events where workspace_id = $1',
      [alice.workspaceId],
    );
    expect(outbox.rows[0].n).toBe(0); // nothing was sent anywhere
    // replay: same execution, no second one
    const replay = await alice.client.post<Execution>(
      `${drafts()}/${draft.id}/features/publish-direct/executions`,
      {},
      { key },
    );
    expect(replay.text).toBe(res.text);
    const executions = await t.owner.query(
      'select count(*)::int as n from feature_executions where record_id = $1',
      [draft.id],
    );
    expect(executions.rows[0].n).toBe(1);
  });

  it('bounds attributes in number too (every revision stores the payload again): 422, nothing written', async () => {
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`a${i}`, 'x']));
    const key = randomUUID();
    const res = await alice.client.post(drafts(), { title: 'many attributes', attributes: many }, { key });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED' });
    const rows = await t.owner.query(
      `select count(*)::int as n from records where payload->>'title' = 'many attributes'`,
    );
    expect(rows.rows[0].n).toBe(0);
    const keys = await t.owner.query(
      `select count(*)::int as n from idempotency_requests where idempotency_key = $1`,
      [key],
    );
    expect(keys.rows[0].n).toBe(0);
    delete many.a100;
    expect((await alice.client.post(drafts(), { title: 'many attributes', attributes: many })).status).toBe(
      201,
    );
  });

  it('unknown features and ids answer 404 with problem+json', async () => {
    const draft = await create();
    const unknown = await alice.client.post(`${drafts()}/${draft.id}/features/teleport/executions`, {});
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({
      code: 'FEATURE_NOT_FOUND',
      detail: 'no such feature; the features are: normalize-text, publish-direct',
    });
    // What was sent is raw path text: the answer never echoes it.
    const markup = await alice.client.post(`${drafts()}/${draft.id}/features/%3Cb%3Ex/executions`, {});
    expect(markup.status).toBe(404);
    expect(JSON.stringify(markup.body)).not.toMatch(/<b>|%3Cb/i);
    // Names every plain object has are not features either (a 500 once: Object's own members).
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const inherited = await alice.client.post(`${drafts()}/${draft.id}/features/${name}/executions`, {});
      expect(inherited.status).toBe(404);
      expect(inherited.body).toMatchObject({ code: 'FEATURE_NOT_FOUND' });
    }
    expect((await alice.client.get(`${drafts()}/not-a-uuid`)).status).toBe(404);
    expect((await alice.client.get(`${drafts()}/${randomUUID()}`)).body).toMatchObject({
      code: 'RESOURCE_NOT_FOUND',
    });
  });

  it('lists drafts newest first with a cursor', async () => {
    const bob = await registerUser(api.url);
    const path = `/v1/workspaces/${bob.workspaceId}/product-drafts`;
    for (let i = 0; i < 5; i++)
      expect((await bob.client.post(path, { title: `item ${i}` })).status).toBe(201);
    const page1 = await bob.client.get<{ items: Draft[]; nextCursor: string }>(`${path}?limit=3`);
    expect(page1.body.items.map((d) => d.data.title)).toEqual(['item 4', 'item 3', 'item 2']);
    const page2 = await bob.client.get<{ items: Draft[]; nextCursor: string | null }>(
      `${path}?limit=3&cursor=${page1.body.nextCursor}`,
    );
    expect(page2.body.items.map((d) => d.data.title)).toEqual(['item 1', 'item 0']);
    expect(page2.body.nextCursor).toBeNull();

    // A crafted cursor PostgreSQL's casts would refuse is a 422, never a 500.
    const crafted = Buffer.from(JSON.stringify({ id: 'not-a-uuid', at: '2020-01-01T00:00:00Z' })).toString(
      'base64url',
    );
    const bad = await bob.client.get(`${path}?cursor=${crafted}`);
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ code: 'VALIDATION_FAILED' });
  });
});
