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

  describe('product updates', () => {
    const create = (key: string, body: unknown, store = 'store-1') =>
      t.call('POST', `/platform/v1/stores/${store}/products`, {
        body,
        headers: { ...auth(), 'idempotency-key': key },
      });
    const update = (key: string | undefined, productId: string, body: unknown, store = 'store-1') =>
      t.call('PUT', `/platform/v1/stores/${store}/products/${productId}`, {
        body,
        headers: { ...auth(), ...(key === undefined ? {} : { 'idempotency-key': key }) },
      });
    const get = (productId: string, store = 'store-1') =>
      t.call('GET', `/platform/v1/stores/${store}/products/${productId}`, { headers: auth() });
    const made = async (store = 'store-1') =>
      (await create(`c-${store}`, { title: 'Mug', price: 9.5, sku: 'M-1' }, store)).body as {
        productId: string;
        createdAt: string;
      };

    it('replaces the content, keeps the identity and bumps the version', async () => {
      const product = await made();
      expect(product).toMatchObject({ version: 1 });
      const res = await update('u-1', product.productId, { title: 'Big mug', price: '12.00', color: 'red' });
      expect(res.status).toBe(200);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
      expect(res.body).toEqual({
        productId: product.productId,
        storeExternalId: 'store-1',
        title: 'Big mug',
        price: '12.00',
        images: [],
        color: 'red', // and no sku: a PUT replaces the whole content
        status: 'online',
        source: 'api',
        createdAt: product.createdAt,
        updatedAt: expect.any(String),
        version: 2,
      });
      expect((await get(product.productId)).body).toEqual(res.body);
      expect(await t.admin.counters()).toMatchObject({
        productUpdateCalls: 1,
        productsUpdated: 1,
        productUpdateCallsByKey: { 'u-1': 1 },
        updatesByProduct: { [product.productId]: 1 },
      });
    });

    it('replays the first answer for its key and changes nothing, even after a later update', async () => {
      const { productId } = await made();
      const first = await update('u-a', productId, { title: 'A', price: 1 });
      const later = await update('u-b', productId, { title: 'B', price: 2 });
      expect(later.body).toMatchObject({ title: 'B', version: 3 });
      const replay = await update('u-a', productId, { price: 1, title: 'A' });
      expect(replay.status).toBe(200);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(first.body);
      expect((await get(productId)).body).toEqual(later.body);
      expect(await t.admin.counters()).toMatchObject({
        productUpdateCalls: 3,
        productsUpdated: 2,
        productUpdateReplays: 1,
        productUpdateCallsByKey: { 'u-a': 2, 'u-b': 1 },
        updatesByProduct: { [productId]: 2 },
      });
    });

    it('replays the create key with the answer the create gave, after updates moved the product on', async () => {
      const created = await create('c-moved', { title: 'Mug', price: 9.5 });
      await update('u-moved', (created.body as { productId: string }).productId, { title: 'Cup', price: 3 });
      const replay = await create('c-moved', { price: 9.5, title: 'Mug' });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(created.body);
      expect(replay.body).toMatchObject({ title: 'Mug', version: 1 });
    });

    it('answers 409 for a key reused with another body, product or operation', async () => {
      const { productId } = await made();
      await update('u-1', productId, { title: 'One' });
      expect((await update('u-1', productId, { title: 'Two' })).body).toMatchObject({
        error: 'IDEMPOTENCY_KEY_REUSED',
      });
      const other = await create('c-other', { title: 'Other' });
      expect((await update('u-1', other.body.productId as string, { title: 'One' })).status).toBe(409);
      // One key space: a create's key is no update's, nor the other way round.
      expect((await update('c-store-1', productId, { title: 'Mug', price: 9.5, sku: 'M-1' })).status).toBe(
        409,
      );
      expect((await create('u-1', { title: 'One' })).status).toBe(409);
      const counters = await t.admin.counters();
      expect(counters).toMatchObject({ productsUpdated: 1, productUpdateConflicts: 3, productConflicts: 1 });
      expect((await get(productId)).body).toMatchObject({ title: 'One', version: 2 });
    });

    it("answers 404 for an unknown, removed or other store's product and keeps the key unused", async () => {
      const { productId } = await made();
      const missing = await update('u-404', 'prd_99999999', { title: 'X' });
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({ error: 'PRODUCT_NOT_FOUND' });
      expect((await update('u-404', productId, { title: 'X' }, 'store-2')).status).toBe(404);
      expect((await get(productId, 'store-2')).body).toMatchObject({ error: 'PRODUCT_NOT_FOUND' });
      expect((await get('prd_99999999')).status).toBe(404);
      const seeded = await t.admin.seedProducts('store-1', 1);
      await t.admin.removeProduct('store-1', seeded.lastProductId);
      expect((await update('u-404', seeded.lastProductId, { title: 'X' })).status).toBe(404);
      expect((await update('u-404', productId, { title: 'X' })).status).toBe(200);
      expect((await t.admin.counters()).productsUpdated).toBe(1);
    });

    it('refuses images the store does not have, a bad body, and a missing key or bearer', async () => {
      const { productId } = await made();
      const image = await update('u-img', productId, { title: 'X', images: ['img_00000042'] });
      expect(image.status).toBe(422);
      expect(image.body).toMatchObject({ error: 'UNKNOWN_IMAGE', images: ['img_00000042'] });
      expect((await update('u-bad', productId, { price: 3 })).status).toBe(400);
      expect((await update(undefined, productId, { title: 'X' })).body).toMatchObject({
        error: 'IDEMPOTENCY_KEY_REQUIRED',
      });
      const noAuth = await t.call('PUT', `/platform/v1/stores/store-1/products/${productId}`, {
        body: { title: 'X' },
        headers: { 'idempotency-key': 'u-x' },
      });
      expect(noAuth.status).toBe(401);
      expect((await t.call('GET', `/platform/v1/stores/store-1/products/${productId}`)).status).toBe(401);
      expect((await t.admin.counters()).productsUpdated).toBe(0);
      expect((await get(productId)).body).toMatchObject({ title: 'Mug', version: 1 });
    });

    it('applies exactly one update for 25 concurrent requests with one key', async () => {
      const { productId } = await made();
      const results = await Promise.all(
        Array.from({ length: 25 }, () => update('u-race', productId, { title: 'Racing' })),
      );
      expect(results.every((r) => r.status === 200 && r.body.version === 2)).toBe(true);
      expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(24);
      expect(await t.admin.counters()).toMatchObject({ productsUpdated: 1, productUpdateReplays: 24 });
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
