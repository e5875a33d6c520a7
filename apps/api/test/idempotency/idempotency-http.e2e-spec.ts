import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { ApiClient, registerUser, type RegisteredUser } from '../support/api-client';
import { startApi, type InProcessApi } from '../support/in-process-api';

const t = useTestDatabase();

interface Draft {
  id: string;
  revision: number;
  data: Record<string, unknown>;
}

/** Idempotency-Key over real HTTP against the real API (Fastify) and PostgreSQL. */
describe('Idempotency-Key over HTTP (product drafts)', () => {
  let api: InProcessApi;
  let alice: RegisteredUser;
  const drafts = () => `/v1/workspaces/${alice.workspaceId}/product-drafts`;
  const count = async (table: string, where = 'true', params: unknown[] = []) =>
    (await t.owner.query(`select count(*)::int as n from ${table} where ${where}`, params)).rows[0]
      .n as number;

  beforeAll(async () => {
    api = await startApi(t.info);
    alice = await registerUser(api.url);
  });
  afterAll(async () => {
    await api?.close();
  });

  it('50 concurrent identical requests with one key → one record, one revision, one audit event, 50 identical answers', async () => {
    const key = randomUUID();
    const title = `Concurrent ${key}`;
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => alice.client.post<Draft>(drafts(), { title }, { key })),
    );
    const statuses = new Set(responses.map((r) => r.status));
    expect([...statuses]).toEqual([201]);
    expect(new Set(responses.map((r) => r.text)).size).toBe(1);
    const replayed = responses.filter((r) => r.headers.get('idempotent-replayed') === 'true');
    expect(replayed).toHaveLength(49);
    const id = responses[0]!.body.id;
    expect(await count('records', 'id = $1', [id])).toBe(1);
    expect(await count('records', "payload->>'title' = $1", [title])).toBe(1);
    expect(await count('record_revisions', 'record_id = $1', [id])).toBe(1);
    expect(await count('audit_events', 'entity_id = $1', [id])).toBe(1);
    expect(await count('idempotency_requests', 'idempotency_key = $1', [key])).toBe(1);
  });

  it('a replay after the record moved on to revision 3 returns revision 1 exactly; the stored row holds references only', async () => {
    const key = randomUUID();
    const title = `Secret-ish title ${randomUUID()}`;
    const first = await alice.client.post<Draft>(
      drafts(),
      { title, description: 'the first description' },
      { key },
    );
    expect(first.status).toBe(201);
    expect(first.headers.get('etag')).toBe('"1"');
    const id = first.body.id;
    for (const rev of [1, 2]) {
      const patched = await alice.client.request<Draft>('PATCH', `${drafts()}/${id}`, {
        body: { title: `changed ${rev}` },
        headers: { 'if-match': `"${rev}"` },
      });
      expect(patched.status).toBe(200);
      expect(patched.headers.get('etag')).toBe(`"${rev + 1}"`);
    }
    // A fresh API process has an empty replay cache: this replay is restored from PostgreSQL.
    const other = await startApi(t.info);
    try {
      const replay = await new ApiClient(other.url, alice.accessToken).post<Draft>(
        drafts(),
        { title, description: 'the first description' },
        { key },
      );
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.text).toBe(first.text);
      expect(replay.body.revision).toBe(1);
    } finally {
      await other.close();
    }
    const current = await alice.client.get<Draft>(`${drafts()}/${id}`);
    expect(current.body.revision).toBe(3);

    const row = await t.owner.query('select * from idempotency_requests where idempotency_key = $1', [key]);
    const stored = JSON.stringify(row.rows[0]);
    expect(row.rows[0].response_envelope).toEqual({
      schemaVersion: 1,
      policy: 'record-snapshot-reference-v1',
      result: { recordId: id, revision: 1 },
    });
    for (const secret of [
      title,
      'the first description',
      alice.accessToken,
      alice.refreshToken,
      alice.password,
    ]) {
      expect(stored).not.toContain(secret);
    }
  });

  it('same key + other body → 409 IDEMPOTENCY_KEY_REUSED; same key on another path → 409 IDEMPOTENCY_SCOPE_CONFLICT', async () => {
    const key = randomUUID();
    const first = await alice.client.post<Draft>(drafts(), { title: 'one' }, { key });
    expect(first.status).toBe(201);
    const reused = await alice.client.post(drafts(), { title: 'two' }, { key });
    expect(reused.status).toBe(409);
    expect(reused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(reused.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', status: 409 });
    const elsewhere = await alice.client.request('PATCH', `${drafts()}/${first.body.id}`, {
      body: { title: 'one' },
      key,
      headers: { 'if-match': '"1"' },
    });
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body).toMatchObject({ code: 'IDEMPOTENCY_SCOPE_CONFLICT' });
    expect(await count('records', "payload->>'title' = 'two'")).toBe(0);
  });

  it.each([
    ['a malformed key', { key: 'not-a-uuid' }, 400, 'IDEMPOTENCY_KEY_INVALID'],
    ['a repeated key header', { header: `${randomUUID()}, ${randomUUID()}` }, 400, 'IDEMPOTENCY_KEY_INVALID'],
    ['invalid JSON', { raw: '{"title":' }, 400, 'INVALID_JSON'],
    [
      'an oversized body',
      { raw: JSON.stringify({ title: 'x', description: 'y'.repeat(2_000_000) }) },
      413,
      'PAYLOAD_TOO_LARGE',
    ],
    ['an unknown field', { body: { title: 'x', surprise: true } }, 422, 'VALIDATION_FAILED'],
    ['an invalid field', { body: { title: '' } }, 422, 'VALIDATION_FAILED'],
    // valid JSON that PostgreSQL cannot store: a 422 naming the field, not a 500 from the database
    ['a NUL character', { body: { title: 'a\u0000b' } }, 422, 'VALIDATION_FAILED'],
    [
      'an unpaired surrogate',
      { body: { title: 'ok', attributes: { colour: 'x\ud800' } } },
      422,
      'VALIDATION_FAILED',
    ],
    [
      'an unpaired surrogate in a key',
      { body: { title: 'ok', attributes: { ['\udc00']: 'x' } } },
      422,
      'VALIDATION_FAILED',
    ],
  ])(
    '%s → rejected with problem+json, and no idempotency row',
    async (_name, c: { key?: string; header?: string; raw?: string; body?: unknown }, status, code) => {
      const key = randomUUID();
      const before = await count('idempotency_requests');
      const headers: Record<string, string> = { 'idempotency-key': c.header ?? c.key ?? key };
      const res = await alice.client.request('POST', drafts(), {
        headers,
        ...(c.raw !== undefined ? { rawBody: c.raw } : { body: c.body ?? { title: 'ok' } }),
      });
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ code });
      expect(await count('idempotency_requests')).toBe(before);
      // the key is still free: the same key with a valid request executes
      if (!c.key && !c.header) {
        const ok = await alice.client.post(drafts(), { title: 'valid now' }, { key });
        expect(ok.status).toBe(201);
        expect(ok.headers.get('idempotent-replayed')).toBeNull();
      }
    },
  );

  it('layer order: validation answers before the key (auth → rate limit → validation → idempotency)', async () => {
    const stores = `/v1/workspaces/${alice.workspaceId}/stores`;
    const valid = { platform: 'sim', storeExternalId: `shop-${randomUUID()}`, apiKey: 'k', apiSecret: 's' };
    const before = await count('idempotency_requests');
    // keyless on a route that requires a key, with a bad body: the body's problem comes first
    const invalid = await alice.client.post(stores, { ...valid, platform: 'nowhere' });
    expect(invalid.status).toBe(422);
    expect(invalid.body).toMatchObject({ code: 'VALIDATION_FAILED' });
    // the same request with a valid body: now the key is what is wrong
    const keyless = await alice.client.post(stores, valid);
    expect(keyless.status).toBe(400);
    expect(keyless.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REQUIRED' });
    // a malformed key with a bad body, then with a good one
    const both = await alice.client.post(drafts(), { title: '' }, { key: 'not-a-uuid' });
    expect(both.status).toBe(422);
    expect(both.body).toMatchObject({ code: 'VALIDATION_FAILED' });
    const badKey = await alice.client.post(drafts(), { title: 'fine' }, { key: 'not-a-uuid' });
    expect(badKey.status).toBe(400);
    expect(badKey.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_INVALID' });
    expect(await count('idempotency_requests')).toBe(before);
    expect(await count('stores', 'store_external_id = $1', [valid.storeExternalId])).toBe(0);
    expect(await count('records', "payload->>'title' = 'fine'")).toBe(0);
  });

  it('401 and 429 outcomes are never cached', async () => {
    const key = randomUUID();
    const anonymous = new ApiClient(api.url, 'lat_not-a-real-token-0000000000000');
    const denied = await anonymous.post(drafts(), { title: 'anon' }, { key });
    expect(denied.status).toBe(401);
    expect(denied.body).toMatchObject({ code: 'UNAUTHENTICATED' });

    const limited = await startApi(t.info, { RATE_LIMIT_WRITES_PER_MINUTE: '2' });
    try {
      const bob = await registerUser(limited.url);
      const path = `/v1/workspaces/${bob.workspaceId}/product-drafts`;
      const answers = [];
      for (let i = 0; i < 3; i++)
        answers.push(await bob.client.post(path, { title: `r${i}` }, { key: randomUUID() }));
      expect(answers.map((a) => a.status)).toEqual([201, 201, 429]);
      expect(answers[2]!.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(answers[2]!.body).toMatchObject({ code: 'RATE_LIMITED' });
      // the 429's key left nothing behind
      expect(await count('idempotency_requests', 'user_id = $1', [bob.userId])).toBe(2);
    } finally {
      await limited.close();
    }
    const later = await alice.client.post(drafts(), { title: 'after 401' }, { key });
    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
  });

  it('per user, one budget for reads and one for writes across every route: polling never uses up the writes', async () => {
    const limited = await startApi(t.info, {
      RATE_LIMIT_READS_PER_MINUTE: '3',
      RATE_LIMIT_WRITES_PER_MINUTE: '2',
    });
    try {
      const bob = await registerUser(limited.url);
      const ws = `/v1/workspaces/${bob.workspaceId}`;
      // Three routes of three modules draw on one budget (it once was one budget per module).
      const reads = [
        await bob.client.get(`${ws}/product-drafts`),
        await bob.client.get(`${ws}/operations/${randomUUID()}`),
        await bob.client.get(`${ws}/stores/${randomUUID()}/products`),
        await bob.client.get(`${ws}/product-drafts`),
      ];
      expect(reads.map((r) => r.status)).toEqual([200, 404, 404, 429]);
      expect(reads[3]!.body).toMatchObject({ code: 'RATE_LIMITED' });
      expect(reads[3]!.headers.get('retry-after')).toMatch(/^\d+$/);
      const writes = [
        await bob.client.post(`${ws}/product-drafts`, { title: 'w0' }, { key: randomUUID() }),
        await bob.client.post(`${ws}/product-drafts`, { title: 'w1' }, { key: randomUUID() }),
        await bob.client.post('/v1/workspaces', { name: 'w2' }),
      ];
      expect(writes.map((w) => w.status)).toEqual([201, 201, 429]);
    } finally {
      await limited.close();
    }
  });

  it('two users of one workspace using the same key value do not collide; one cannot replay the other', async () => {
    const bob = await registerUser(api.url);
    const invited = await alice.client.post<{ id: string }>(`/v1/workspaces/${alice.workspaceId}/members`, {
      email: bob.email,
      role: 'member',
    });
    expect(invited.status).toBe(201);
    const accepted = await bob.client.post(`/v1/invitations/${invited.body.id}/accept`);
    expect(accepted.status).toBe(200);
    const key = randomUUID();
    const a = await alice.client.post<Draft>(drafts(), { title: 'shared key' }, { key });
    const b = await bob.client.post<Draft>(drafts(), { title: 'shared key' }, { key });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(b.body.id).not.toBe(a.body.id);
    expect(await count('idempotency_requests', 'idempotency_key = $1', [key])).toBe(2);
  });

  it('the operations list filters by a whole resource or not at all (half a filter is a 422)', async () => {
    const ops = `/v1/workspaces/${alice.workspaceId}/operations`;
    expect((await alice.client.get(ops)).status).toBe(200);
    expect(
      (await alice.client.get(`${ops}?resourceType=publication&resourceId=${randomUUID()}`)).status,
    ).toBe(200);
    const half = await alice.client.get(`${ops}?resourceId=${randomUUID()}`);
    expect(half.status).toBe(422);
    expect(half.body).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect((await alice.client.get(`${ops}?resourceType=publication`)).status).toBe(422);
    expect((await alice.client.get(`${ops}?resourceType=&resourceId=${randomUUID()}`)).status).toBe(422);
  });

  it('a non-member cannot reach the workspace at all (404, nothing written)', async () => {
    const mallory = await registerUser(api.url);
    const res = await mallory.client.post(drafts(), { title: 'intrusion' }, { key: randomUUID() });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'WORKSPACE_NOT_FOUND' });
    expect(await count('records', "payload->>'title' = 'intrusion'")).toBe(0);
  });
});
