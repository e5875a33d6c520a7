import { auth, useSim } from './sim-http.helpers';

describe('platform-sim fault injection', () => {
  const t = useSim();
  const createProduct = (key: string, signal?: AbortSignal) =>
    t.call('POST', '/platform/v1/stores/store-1/products', {
      body: { title: `Product ${key}` },
      headers: { ...auth(), 'idempotency-key': key },
      signal,
    });
  const aiText = (key: string) =>
    t.call('POST', '/ai/v1/text', { body: { prompt: key }, headers: { 'idempotency-key': key } });

  it('dropResponse applies the side effect, then the client sees a socket error; a retry replays', async () => {
    await t.admin.setFaults({ dropResponseRate: 1 });
    await expect(createProduct('drop-1')).rejects.toThrow(/fetch failed/);
    await expect(aiText('drop-ai')).rejects.toThrow(/fetch failed/);

    const afterDrop = await t.admin.counters();
    expect(afterDrop.productsCreated).toBe(1);
    expect(afterDrop.billingEntries).toBe(1);
    expect(afterDrop.faults.drops).toBe(2);

    await t.admin.clearFaults();
    const retry = await createProduct('drop-1');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.productId).toBe(afterDrop.productsByKey['drop-1']);
    await aiText('drop-ai');
    expect(await t.admin.counters()).toMatchObject({ productsCreated: 1, billingEntries: 1 });
  });

  it('errorRate answers 503 with a JSON body before any side effect', async () => {
    await t.admin.setFaults({ errorRate: 1 });
    const res = await createProduct('err-1');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: 'SIMULATED_FAULT', retryable: true });
    const counters = await t.admin.counters();
    expect(counters.productsCreated).toBe(0);
    expect(counters.productCreateCallsByKey).toEqual({});
    expect(counters.faults.errors).toBe(1);
  });

  it('a seeded error rate gives the same outcomes on every run and roughly the asked rate', async () => {
    const run = async () => {
      await t.admin.reset();
      await t.admin.setFaults({ errorRate: 0.3, seed: 42 });
      const statuses: number[] = [];
      for (let i = 0; i < 100; i += 1) statuses.push((await aiText(`seeded-${i}`)).status);
      return statuses;
    };
    const first = await run();
    const second = await run();
    expect(second).toEqual(first);
    const errors = first.filter((s) => s === 503).length;
    expect(errors).toBeGreaterThan(15);
    expect(errors).toBeLessThan(45);
    expect(first.filter((s) => s === 200)).toHaveLength(100 - errors);
    expect((await t.admin.counters()).billingEntries).toBe(100 - errors);
  });

  it('latencyMs delays each targeted request', async () => {
    await t.admin.setFaults({ latencyMs: 150 });
    const started = Date.now();
    const res = await aiText('slow');
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect((await t.admin.counters()).faults.delayed).toBe(1);
  });

  it('a timeout holds the request unanswered until the client gives up, with no side effect', async () => {
    await t.admin.setFaults({ timeoutRate: 1 });
    const started = Date.now();
    await expect(createProduct('held', AbortSignal.timeout(200))).rejects.toThrow(/abort|timeout/i);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    const counters = await t.admin.counters();
    expect(counters.faults.timeouts).toBe(1);
    expect(counters.productsCreated).toBe(0);
  });

  it('a timeout destroys the socket after timeoutMs when the client keeps waiting', async () => {
    await t.admin.setFaults({ timeoutRate: 1, timeoutMs: 150 });
    const started = Date.now();
    await expect(createProduct('held-2')).rejects.toThrow(/fetch failed/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('routes limit faults to matching prefixes, globs and methods; admin and health are never faulted', async () => {
    await t.admin.setFaults({ errorRate: 1, routes: ['/ai/v1/text'] });
    expect((await aiText('t')).status).toBe(503);
    expect(
      (await t.call('POST', '/ai/v1/category', { body: {}, headers: { 'idempotency-key': 'c' } })).status,
    ).toBe(200);
    expect((await createProduct('p')).status).toBe(201);

    await t.admin.setFaults({ errorRate: 1, routes: ['POST /platform/v1/stores/*/products'] });
    expect((await createProduct('p2')).status).toBe(503);
    expect((await t.call('GET', '/platform/v1/stores/store-1/products', { headers: auth() })).status).toBe(
      200,
    );

    await t.admin.setFaults({ errorRate: 1, routes: ['/admin', '/health'] });
    expect((await t.call('GET', '/health')).status).toBe(200);
    expect(await t.admin.getFaults()).toHaveLength(1);
  });

  it('applies the first matching rule of several', async () => {
    await t.admin.setFaults({
      rules: [
        { errorRate: 1, routes: ['/ai/'] },
        { latencyMs: 0, dropResponseRate: 1 },
      ],
    });
    expect((await aiText('a')).status).toBe(503);
    await expect(createProduct('b')).rejects.toThrow(/fetch failed/);
    await t.admin.clearFaults();
    expect(await t.admin.getFaults()).toEqual([]);
    expect((await aiText('a')).status).toBe(200);
  });

  it('rejects an invalid fault configuration with every problem listed', async () => {
    await expect(t.admin.setFaults({ errorRate: 2, timeoutRate: -1 })).rejects.toMatchObject({
      status: 400,
      body: {
        error: 'VALIDATION_FAILED',
        problems: [expect.stringMatching(/^errorRate/), expect.stringMatching(/^timeoutRate/)],
      },
    });
  });
});
