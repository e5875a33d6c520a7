import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
    await createProduct(first, 'shop-a', 'pub-1', 'Teapot');
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
    });
    expect(await listProducts(second, 'shop-a')).toEqual([]);
    const again = await createProduct(second, 'shop-a', 'pub-1', 'Other title');
    expect(again).toMatchObject({ status: 201, replayed: false, body: { productId: 'prd_00000001' } });
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
