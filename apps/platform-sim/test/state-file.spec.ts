import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadSimConfig, type RunningPlatformSim, SimAdminClient, startPlatformSim } from '../src/index';
import { auth } from './sim-http.helpers';

async function call(
  sim: RunningPlatformSim,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; replayed: boolean; body: Record<string, unknown> }> {
  const response = await fetch(`${sim.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(10_000),
  });
  const isJson = response.headers.get('content-type')?.includes('json') ?? false;
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    body: isJson ? ((await response.json()) as Record<string, unknown>) : (await response.arrayBuffer(), {}),
  };
}

const createProduct = (sim: RunningPlatformSim, store: string, key: string, title: string) =>
  call(sim, 'POST', `/platform/v1/stores/${store}/products`, {
    body: { title, price: '9.99', images: ['https://img.example/1.png'] },
    headers: { ...auth(), 'idempotency-key': key },
  });

const listProducts = async (sim: RunningPlatformSim, store: string) =>
  (await call(sim, 'GET', `/platform/v1/stores/${store}/products?limit=200`, { headers: auth() })).body
    .items as Array<{ productId: string; title: string }>;

const updateProduct = (
  sim: RunningPlatformSim,
  store: string,
  productId: string,
  key: string,
  title: string,
) =>
  call(sim, 'PUT', `/platform/v1/stores/${store}/products/${productId}`, {
    body: { title, price: '19.99', description: `about ${title}` },
    headers: { ...auth(), 'idempotency-key': key },
  });

const getProduct = async (sim: RunningPlatformSim, store: string, productId: string) =>
  (await call(sim, 'GET', `/platform/v1/stores/${store}/products/${productId}`, { headers: auth() })).body;

// The tables of schemas 1 to 3 as those simulators created them (schema 2 added images, schema 3
// product updates), to build old files by hand.
const SCHEMA_V1 = `
  CREATE TABLE products (
    seq INTEGER PRIMARY KEY,
    store_external_id TEXT NOT NULL,
    idempotency_key TEXT UNIQUE,
    fingerprint TEXT,
    removed INTEGER NOT NULL DEFAULT 0,
    body TEXT NOT NULL
  ) STRICT;
  CREATE TABLE ai_calls (
    seq INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    result TEXT NOT NULL,
    entry TEXT NOT NULL
  ) STRICT;
  CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT, WITHOUT ROWID;
  CREATE TABLE key_counters (
    counter TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (counter, idempotency_key)
  ) STRICT, WITHOUT ROWID;
`;
const IMAGES_V2 = `
  CREATE TABLE images (
    seq INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    bytes BLOB NOT NULL
  ) STRICT;
`;

const PRODUCT_UPDATES_V3 = `
  CREATE TABLE product_updates (
    seq INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    product_seq INTEGER NOT NULL,
    body TEXT NOT NULL
  ) STRICT;
`;

/** A state file of an older schema holding one product (without a version, as they had none). */
function writeOldStateFile(path: string, version: 1 | 2 | 3): void {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.exec([SCHEMA_V1, IMAGES_V2, PRODUCT_UPDATES_V3].slice(0, version).join(''));
  db.pragma(`application_id = ${0x53494d53}`); // 'SIMS', as the simulator marks its files
  db.pragma(`user_version = ${version}`);
  const old = {
    productId: 'prd_00000001',
    storeExternalId: 'shop-a',
    title: 'Old teapot',
    price: '9.99',
    images: [],
    status: 'online',
    source: 'api',
    createdAt: '2026-01-01T00:00:00.000Z',
  };
  db.prepare(
    'INSERT INTO products (seq, store_external_id, idempotency_key, fingerprint, body) VALUES (1, ?, ?, ?, ?)',
  ).run('shop-a', 'pub-old', 'f'.repeat(64), JSON.stringify(old));
  db.prepare("INSERT INTO counters (name, value) VALUES ('productsCreated', 1)").run();
  db.close();
}

const schemaOf = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((row) => row.name);
    return { version: db.pragma('user_version', { simple: true }) as number, tables };
  } finally {
    db.close();
  }
};

const aiText = (sim: RunningPlatformSim, key: string, prompt: string) =>
  call(sim, 'POST', '/ai/v1/text', { body: { prompt }, headers: { 'idempotency-key': key } });

describe('platform-sim state file', () => {
  let dir: string;
  let file: string;
  const running: RunningPlatformSim[] = [];
  /** `null`: in memory. */
  const start = async (stateFile: string | null = file) => {
    const sim = await startPlatformSim({ stateFile: stateFile ?? undefined });
    running.push(sim);
    return sim;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'platform-sim-state-'));
    file = join(dir, 'nested', 'sim.db'); // the directory is created on first start
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((sim) => sim.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps ids, products, idempotency records, the ledger and the counters across a restart', async () => {
    const first = await start();
    expect(first.state.stateFile).toBe(file);
    const created = await createProduct(first, 'shop-a', 'pub-1', 'Teapot');
    expect(created).toMatchObject({ status: 201, replayed: false, body: { productId: 'prd_00000001' } });
    const admin1 = new SimAdminClient(first.url);
    expect(await admin1.seedProducts('shop-b', 2)).toMatchObject({ lastProductId: 'prd_00000003' });
    await admin1.removeProduct('shop-b', 'prd_00000002');
    const text = await aiText(first, 'ai-1', 'describe a teapot');
    expect(text.body).toMatchObject({ resultId: 'air_00000001', billingEntryId: 'bill_00000001' });
    await call(first, 'POST', '/platform/v1/credentials/verify', {
      body: { storeExternalId: 'shop-a', apiKey: 'nope', apiSecret: 's' },
    });
    await call(first, 'GET', '/platform/v1/media/a-8x8.png');
    const countersBefore = await admin1.counters();
    const billingBefore = await admin1.billing();
    await first.close();

    const second = await start();
    const admin2 = new SimAdminClient(second.url);
    // Everything the tests read through /admin is as it was.
    expect(await admin2.counters()).toEqual(countersBefore);
    expect(await admin2.billing()).toEqual(billingBefore);
    expect(await admin2.countersFor('pub-1')).toMatchObject({
      productCreateCalls: 1,
      productId: 'prd_00000001',
    });
    // Earlier products are still listed; a removed one stays removed.
    expect(await listProducts(second, 'shop-a')).toEqual([created.body]);
    expect((await listProducts(second, 'shop-b')).map((p) => p.productId)).toEqual(['prd_00000003']);
    // The provider key still replays the same product, and bills / creates nothing.
    const replay = await createProduct(second, 'shop-a', 'pub-1', 'Teapot');
    expect(replay).toEqual({ status: 201, replayed: true, body: created.body });
    expect((await createProduct(second, 'shop-a', 'pub-1', 'Other title')).status).toBe(409);
    expect(await aiText(second, 'ai-1', 'describe a teapot')).toEqual({ ...text, replayed: true });
    // New ids continue after the old ones: no id is handed out twice.
    expect((await createProduct(second, 'shop-a', 'pub-2', 'Kettle')).body.productId).toBe('prd_00000004');
    expect((await aiText(second, 'ai-2', 'a kettle')).body).toMatchObject({
      resultId: 'air_00000002',
      billingEntryId: 'bill_00000002',
    });
    const countersAfter = await admin2.counters();
    expect(countersAfter).toMatchObject({
      productCreateCalls: 4,
      productsCreated: 2,
      productReplays: 1,
      productConflicts: 1,
      productsSeeded: 2,
      aiCalls: 3,
      aiReplays: 1,
      billingEntries: 2,
      verifyCalls: 1,
      verifyFailures: 1,
      mediaRequests: 1,
      productCreateCallsByKey: { 'pub-1': 3, 'pub-2': 1 },
      productsByKey: { 'pub-1': 'prd_00000001', 'pub-2': 'prd_00000004' },
      billingByKey: { 'ai-1': 1, 'ai-2': 1 },
    });
    await second.close();

    // And once more: what the second run added is kept too.
    const third = await start();
    expect(await new SimAdminClient(third.url).counters()).toEqual(countersAfter);
    expect((await listProducts(third, 'shop-a')).map((p) => p.productId)).toEqual([
      'prd_00000001',
      'prd_00000004',
    ]);
  });

  it('keeps updated products, their versions and the update keys across a restart', async () => {
    const first = await start();
    const { body: created } = await createProduct(first, 'shop-a', 'pub-1', 'Teapot');
    const productId = created.productId as string;
    const updated = await updateProduct(first, 'shop-a', productId, 'upd-1', 'Teapot XL');
    expect(updated).toMatchObject({ status: 200, replayed: false, body: { title: 'Teapot XL', version: 2 } });
    const later = await updateProduct(first, 'shop-a', productId, 'upd-2', 'Teapot XXL');
    const countersBefore = await new SimAdminClient(first.url).counters();
    expect(countersBefore).toMatchObject({ productsUpdated: 2, updatesByProduct: { [productId]: 2 } });
    await first.close();

    const second = await start();
    const admin2 = new SimAdminClient(second.url);
    expect(await admin2.counters()).toEqual(countersBefore);
    expect(await getProduct(second, 'shop-a', productId)).toEqual(later.body);
    expect(await listProducts(second, 'shop-a')).toEqual([later.body]);
    // The first key still answers what it answered, and moves nothing.
    expect(await updateProduct(second, 'shop-a', productId, 'upd-1', 'Teapot XL')).toEqual({
      ...updated,
      replayed: true,
    });
    expect((await updateProduct(second, 'shop-a', productId, 'upd-1', 'Other')).status).toBe(409);
    expect(await getProduct(second, 'shop-a', productId)).toEqual(later.body);
    // The create key replays what the create answered, kept by the first update.
    expect(await createProduct(second, 'shop-a', 'pub-1', 'Teapot')).toEqual({
      status: 201,
      replayed: true,
      body: created,
    });
    const third = await updateProduct(second, 'shop-a', productId, 'upd-3', 'Teapot S');
    expect(third.body).toMatchObject({ version: 4, title: 'Teapot S' });
    expect(await admin2.counters()).toMatchObject({
      productUpdateCalls: 5,
      productsUpdated: 3,
      productUpdateReplays: 1,
      productUpdateConflicts: 1,
      productUpdateCallsByKey: { 'upd-1': 3, 'upd-2': 1, 'upd-3': 1 },
      updatesByProduct: { [productId]: 3 },
    });
  });

  it.each([1, 2, 3] as const)(
    'upgrades a schema %i file to 4, its products at version 1',
    async (version) => {
      writeOldStateFile(file, version);
      const sim = await start();
      const old = await getProduct(sim, 'shop-a', 'prd_00000001');
      expect(old).toMatchObject({ title: 'Old teapot', version: 1 });
      const updated = await updateProduct(sim, 'shop-a', 'prd_00000001', 'upd-1', 'Renewed teapot');
      expect(updated.body).toMatchObject({ version: 2, createdAt: '2026-01-01T00:00:00.000Z' });
      expect((await createProduct(sim, 'shop-a', 'pub-2', 'Kettle')).body.productId).toBe('prd_00000002');
      await sim.close(); // the simulator holds its file exclusively while it runs

      expect(schemaOf(file)).toEqual({
        version: 4,
        tables: ['ai_calls', 'counters', 'images', 'key_counters', 'product_updates', 'products'],
      });
      const again = await start();
      expect(await getProduct(again, 'shop-a', 'prd_00000001')).toEqual(updated.body);
      expect(await updateProduct(again, 'shop-a', 'prd_00000001', 'upd-1', 'Renewed teapot')).toEqual({
        ...updated,
        replayed: true,
      });
      expect((await new SimAdminClient(again.url).counters()).productsCreated).toBe(2);
    },
  );

  it('keeps uploaded images (bytes, ids, keys) across a restart', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const upload = (sim: RunningPlatformSim, key: string, bytes: Buffer) =>
      fetch(`${sim.url}/platform/v1/stores/shop-a/images`, {
        method: 'POST',
        headers: { ...auth(), 'idempotency-key': key, 'content-type': 'image/png' },
        body: bytes,
      });
    const first = await start();
    const created = (await (await upload(first, 'img-key-1', png)).json()) as { imageId: string };
    expect(created.imageId).toBe('img_00000001');
    await first.close();

    const second = await start();
    const replay = await upload(second, 'img-key-1', png);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toMatchObject({ imageId: 'img_00000001', size: png.length });
    expect((await upload(second, 'img-key-1', Buffer.concat([png, png]))).status).toBe(409);
    const next = (await (await upload(second, 'img-key-2', png)).json()) as { imageId: string };
    expect(next.imageId).toBe('img_00000002');
    const served = await fetch(`${second.url}/platform/v1/stores/shop-a/images/img_00000001`, {
      headers: auth(),
    });
    expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);
    const product = await call(second, 'POST', '/platform/v1/stores/shop-a/products', {
      body: { title: 'With image', images: ['img_00000001'] },
      headers: { ...auth(), 'idempotency-key': 'pub-img' },
    });
    expect(product).toMatchObject({ status: 201, body: { images: ['img_00000001'] } });
    const foreign = await call(second, 'POST', '/platform/v1/stores/shop-b/products', {
      body: { title: 'Not its image', images: ['img_00000001'] },
      headers: { ...auth(), 'idempotency-key': 'pub-img-b' },
    });
    expect(foreign).toMatchObject({ status: 422, body: { error: 'UNKNOWN_IMAGE' } });
  });

  it('reset clears the file too', async () => {
    const first = await start();
    const { body } = await createProduct(first, 'shop-a', 'pub-1', 'Teapot');
    await updateProduct(first, 'shop-a', body.productId as string, 'upd-1', 'Teapot XL');
    await aiText(first, 'ai-1', 'x');
    await new SimAdminClient(first.url).reset();
    await first.close();

    const second = await start();
    expect(await new SimAdminClient(second.url).counters()).toMatchObject({
      productCreateCalls: 0,
      productsCreated: 0,
      aiCalls: 0,
      billingEntries: 0,
      productsByKey: {},
      productsUpdated: 0,
      updatesByProduct: {},
    });
    expect(await listProducts(second, 'shop-a')).toEqual([]);
    const again = await createProduct(second, 'shop-a', 'pub-1', 'Other title');
    expect(again).toMatchObject({ status: 201, replayed: false, body: { productId: 'prd_00000001' } });
    // The update key was forgotten with the rest: it updates afresh.
    expect(await updateProduct(second, 'shop-a', 'prd_00000001', 'upd-1', 'Teapot XL')).toMatchObject({
      status: 200,
      replayed: false,
      body: { version: 2 },
    });
  });

  it('refuses a second simulator on a file in use, and a file that is not a state file', async () => {
    await start();
    await expect(start()).rejects.toMatchObject({
      code: 'SIM_STATE_FILE',
      message: expect.stringContaining('in use by another platform-sim'),
    });
    const notOurs = join(dir, 'notes.db');
    writeFileSync(
      notOurs,
      'not a database, just some text that is long enough to have a header\n'.repeat(20),
    );
    await expect(start(notOurs)).rejects.toMatchObject({
      code: 'SIM_STATE_FILE',
      message: expect.stringContaining('not a SQLite file'),
    });
  });

  it('without a file each simulator starts empty and stays isolated', async () => {
    const a = await start(null);
    const b = await start(null);
    expect(a.state.stateFile).toBeUndefined();
    await createProduct(a, 'shop-a', 'pub-1', 'Teapot');
    expect(await listProducts(b, 'shop-a')).toEqual([]);
    expect((await createProduct(b, 'shop-a', 'pub-1', 'Other title')).body.productId).toBe('prd_00000001');
    await a.close();
    const c = await start(null);
    expect(await listProducts(c, 'shop-a')).toEqual([]);
    expect((await new SimAdminClient(c.url).counters()).productCreateCalls).toBe(0);
  });

  it('reads SIM_STATE_FILE, empty meaning in memory', () => {
    expect(loadSimConfig({ SIM_STATE_FILE: 'var/platform-sim.db' }).SIM_STATE_FILE).toBe(
      'var/platform-sim.db',
    );
    expect(loadSimConfig({ SIM_STATE_FILE: '' }).SIM_STATE_FILE).toBeUndefined();
  });
});
