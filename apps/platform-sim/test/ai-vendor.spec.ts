import { useSim } from './sim-http.helpers';

describe('platform-sim AI vendor', () => {
  const t = useSim();
  const ai = (kind: string, key: string | undefined, body: unknown) =>
    t.call('POST', `/ai/v1/${kind}`, { body, headers: key === undefined ? {} : { 'idempotency-key': key } });

  it('derives results from the input deterministically', async () => {
    const text = await ai('text', 'task-text-1', { prompt: 'Describe a red mug' });
    expect(text.status).toBe(200);
    expect(text.body).toMatchObject({
      kind: 'text',
      text: 'Generated: Describe a red mug',
      billingEntryId: expect.any(String),
    });

    const categoryA = await ai('category', 'task-cat-1', { title: 'Red mug' });
    const categoryB = await ai('category', 'task-cat-2', { title: 'Red mug' });
    expect(categoryA.body).toMatchObject({
      categoryId: expect.stringMatching(/^cat-/),
      path: expect.any(Array),
    });
    expect(categoryB.body.categoryId).toBe(categoryA.body.categoryId);
    expect(categoryB.body.path).toEqual(categoryA.body.path);

    const image = await ai('image', 'task-img-1', { prompt: 'mug on a table', width: 320, height: 240 });
    expect(image.body.imageUrl).toMatch(
      new RegExp(`^${t.sim.url}/platform/v1/media/ai-[0-9a-f]{16}-320x240\\.png$`),
    );
    const media = await fetch(image.body.imageUrl as string);
    expect(media.headers.get('content-type')).toBe('image/png');
    const bytes = Buffer.from(await media.arrayBuffer());
    expect([bytes.readUInt32BE(16), bytes.readUInt32BE(20)]).toEqual([320, 240]);
  });

  it('bills once per key: a replay returns the same result and bills nothing', async () => {
    const first = await ai('text', 'bill-1', { prompt: 'hello' });
    const replay = await ai('text', 'bill-1', { prompt: 'hello' });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    await ai('text', 'bill-2', { prompt: 'hello' });

    const counters = await t.admin.counters();
    expect(counters).toMatchObject({ aiCalls: 3, aiReplays: 1, billingEntries: 2 });
    expect(counters.billingByKey).toEqual({ 'bill-1': 1, 'bill-2': 1 });
    expect(await t.admin.countersFor('bill-1')).toMatchObject({ aiCalls: 2, billingEntries: 1 });
    const ledger = await t.admin.billing();
    expect(ledger.map((e) => e.idempotencyKey)).toEqual(['bill-1', 'bill-2']);
    expect(ledger[0]).toMatchObject({ kind: 'text', units: 1, entryId: first.body.billingEntryId });
  });

  it('bills once for 40 concurrent calls with one key', async () => {
    const results = await Promise.all(Array.from({ length: 40 }, () => ai('image', 'race', { prompt: 'p' })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.body.resultId)).size).toBe(1);
    const counters = await t.admin.counters();
    expect(counters.billingEntries).toBe(1);
    expect(counters.aiCallsByKey).toEqual({ race: 40 });
  });

  it('refuses a reused key with another body or another endpoint, billing nothing', async () => {
    await ai('text', 'k', { prompt: 'a' });
    expect((await ai('text', 'k', { prompt: 'b' })).body).toMatchObject({ error: 'IDEMPOTENCY_KEY_REUSED' });
    expect((await ai('category', 'k', { prompt: 'a' })).body).toMatchObject({
      error: 'IDEMPOTENCY_SCOPE_CONFLICT',
    });
    expect((await t.admin.counters()).billingEntries).toBe(1);
  });

  it('requires the Idempotency-Key header and an object body', async () => {
    const missing = await ai('text', undefined, { prompt: 'a' });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'IDEMPOTENCY_KEY_REQUIRED' });
    expect((await ai('text', 'arr', [1, 2])).status).toBe(400);
    expect((await t.admin.counters()).billingEntries).toBe(0);
  });
});
