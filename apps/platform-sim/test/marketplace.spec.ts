import { auth, useSim } from './sim-http.helpers';

const SECRET = 'sup3r-s3cret-VALUE-do-not-echo';

describe('platform-sim marketplace', () => {
  const t = useSim();

  describe('credential verification', () => {
    it('accepts an apiKey starting with valid- and names the shop', async () => {
      const res = await t.call('POST', '/platform/v1/credentials/verify', {
        body: { storeExternalId: 'store-1', apiKey: 'valid-abc', apiSecret: SECRET },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ valid: true, storeExternalId: 'store-1', shopName: 'Sim Shop store-1' });
      expect(res.text).not.toContain(SECRET);
    });

    it('rejects other keys with 401 and a fixed reason, echoing neither key nor secret', async () => {
      const res = await t.call('POST', '/platform/v1/credentials/verify', {
        body: { storeExternalId: 'store-1', apiKey: 'revoked-key-xyz', apiSecret: SECRET },
      });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ valid: false, reason: 'INVALID_CREDENTIALS' });
      expect(res.text).not.toContain(SECRET);
      expect(res.text).not.toContain('revoked-key-xyz');
      expect(await t.admin.counters()).toMatchObject({ verifyCalls: 1, verifyFailures: 1 });
    });

    it('never echoes the secret in validation or JSON-syntax errors', async () => {
      const invalid = await t.call('POST', '/platform/v1/credentials/verify', {
        body: { storeExternalId: 'bad store id!', apiKey: 42, apiSecret: SECRET },
      });
      expect(invalid.status).toBe(400);
      expect(invalid.body).toMatchObject({ error: 'VALIDATION_FAILED' });
      expect(invalid.text).not.toContain(SECRET);

      // V8's JSON.parse error messages quote the input; the simulator must not pass them on.
      const malformed = await t.call('POST', '/platform/v1/credentials/verify', {
        rawBody: `{"storeExternalId":"s","apiKey":"valid-k","apiSecret":"${SECRET}"`,
      });
      expect(malformed.status).toBe(400);
      expect(malformed.body).toEqual({
        error: 'INVALID_BODY',
        message: 'the request body is not valid JSON',
      });
      expect(malformed.text).not.toContain(SECRET);
    });
  });

  describe('product creation', () => {
    const create = (key: string | undefined, body: unknown, store = 'store-1', apiKey?: string) =>
      t.call('POST', `/platform/v1/stores/${store}/products`, {
        body,
        headers: { ...auth(apiKey), ...(key === undefined ? {} : { 'idempotency-key': key }) },
      });

    it('creates a product and replays it for the same key, whatever the key order of the body', async () => {
      const first = await create('pub-1', {
        title: 'Mug',
        price: 9.5,
        images: ['https://x/1.png'],
        sku: 'M-1',
      });
      expect(first.status).toBe(201);
      expect(first.body).toMatchObject({
        productId: expect.stringMatching(/^prd_/),
        storeExternalId: 'store-1',
        title: 'Mug',
        price: 9.5,
        images: ['https://x/1.png'],
        sku: 'M-1',
        status: 'online',
      });
      expect(first.headers.get('idempotent-replayed')).toBeNull();

      const replay = await create('pub-1', {
        sku: 'M-1',
        images: ['https://x/1.png'],
        price: 9.5,
        title: 'Mug',
      });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(first.body);

      const counters = await t.admin.counters();
      expect(counters.productsCreated).toBe(1);
      expect(counters.productCreateCallsByKey).toEqual({ 'pub-1': 2 });
      expect(counters.productsByKey).toEqual({ 'pub-1': first.body.productId });
      expect(await t.admin.countersFor('pub-1')).toMatchObject({
        productCreateCalls: 2,
        productId: first.body.productId,
      });
    });

    it('creates exactly one product for 25 concurrent requests with one key', async () => {
      const results = await Promise.all(
        Array.from({ length: 25 }, () => create('race-key', { title: 'Racing', price: '10.00' })),
      );
      expect(results.every((r) => r.status === 201)).toBe(true);
      expect(new Set(results.map((r) => r.body.productId)).size).toBe(1);
      expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(24);
      const counters = await t.admin.counters();
      expect(counters.productsCreated).toBe(1);
      expect(counters.productCreateCallsByKey['race-key']).toBe(25);
    });

    it('answers 409 for the same key with another body or on another store, and creates nothing', async () => {
      await create('k-409', { title: 'One' });
      const otherBody = await create('k-409', { title: 'Two' });
      expect(otherBody.status).toBe(409);
      expect(otherBody.body).toMatchObject({ error: 'IDEMPOTENCY_KEY_REUSED' });
      const otherStore = await create('k-409', { title: 'One' }, 'store-2');
      expect(otherStore.status).toBe(409);
      expect((await t.admin.counters()).productsCreated).toBe(1);
    });

    it('requires the Idempotency-Key header and a valid bearer key', async () => {
      expect((await create(undefined, { title: 'x' })).body).toMatchObject({
        error: 'IDEMPOTENCY_KEY_REQUIRED',
      });
      const noAuth = await t.call('POST', '/platform/v1/stores/store-1/products', {
        body: { title: 'x' },
        headers: { 'idempotency-key': 'k' },
      });
      expect(noAuth.status).toBe(401);
      expect((await create('k', { title: 'x' }, 'store-1', 'wrong-key')).status).toBe(401);
      const invalid = await create('k-invalid', { price: -1 });
      expect(invalid.status).toBe(400);
      // A rejected body caches nothing: the key may still be used.
      expect((await create('k-invalid', { title: 'fixed' })).status).toBe(201);
      expect((await t.admin.counters()).productsCreated).toBe(1);
    });
  });

  describe('product listing', () => {
    const list = (store: string, query: string) =>
      t.call<{ items: Array<{ productId: string; title: string }>; nextCursor: string | null }>(
        'GET',
        `/platform/v1/stores/${store}/products${query}`,
        { headers: auth() },
      );

    it('pages through every product once, in creation order, with stable cursors', async () => {
      await t.admin.seedProducts('store-a', 23, 'Item');
      await t.admin.seedProducts('store-b', 5);
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await list('store-a', `?limit=10${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.status).toBe(200);
        seen.push(...res.body.items.map((p) => p.productId));
        cursor = res.body.nextCursor;
        pages += 1;
        // Products added mid-iteration land after the cursor, never shifting earlier pages.
        if (pages === 1) await t.admin.seedProducts('store-a', 2, 'Late');
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toHaveLength(25);
      expect(new Set(seen).size).toBe(25);
      expect([...seen].sort()).toEqual(seen);

      const again = await list('store-a', '?limit=10');
      expect(again.body.items.map((p) => p.productId)).toEqual(seen.slice(0, 10));
      expect(again.body.items[0].title).toBe('Item 1');
    });

    it('lists an unknown store as empty and rejects a forged cursor or a bad limit', async () => {
      expect((await list('nobody', '')).body).toEqual({ items: [], nextCursor: null });
      expect((await list('store-a', '?cursor=not-a-cursor')).status).toBe(400);
      expect((await list('store-a', '?limit=0')).status).toBe(400);
      expect((await list('store-a', '?limit=500')).status).toBe(400);
    });

    it('requires a valid bearer key', async () => {
      expect((await t.call('GET', '/platform/v1/stores/store-a/products')).status).toBe(401);
    });
  });
});
