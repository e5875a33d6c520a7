import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  PlatformClient,
  PlatformRejectedError,
  PlatformUnavailableError,
} from '../src/modules/platform/platform.client';

/** The marketplace's product pages are checked before anything is stored. */
describe('PlatformClient.listProducts', () => {
  let server: Server;
  let page: unknown;
  let client: PlatformClient;

  beforeAll(async () => {
    server = createServer((_, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(page));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new PlatformClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 2000);
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('keeps one item per product id (the last) stores times as UTC, and drops one PostgreSQL would refuse', async () => {
    page = {
      items: [
        { productId: 'p1', title: 'old', price: 1, status: 'online', createdAt: '2026-11-30T05:00:00Z' },
        { productId: 'p2', title: 'two', price: null, status: 'online', createdAt: '2024-02-30T00:00:00Z' },
        { productId: 'p3', title: 'three', createdAt: '2026-11-30T06:00:00+01:00' },
        { productId: 'p1', title: 'new', price: '2.50', status: 'offline' },
      ],
      nextCursor: 'c2',
    };
    const result = await client.listProducts('shop', 'key', null, 100);
    expect(result.nextCursor).toBe('c2');
    expect(result.items).toEqual([
      { productId: 'p1', title: 'new', price: '2.50', status: 'offline', createdAt: undefined },
      { productId: 'p2', title: 'two', price: null, status: 'online', createdAt: undefined },
      {
        productId: 'p3',
        title: 'three',
        price: null,
        status: 'online',
        createdAt: '2026-11-30T05:00:00.000Z',
      },
    ]);
  });

  it.each([
    ['no items array', { nextCursor: null }],
    ['an id longer than the column (would collide once cut)', { items: [{ productId: 'x'.repeat(201) }] }],
    ['an empty id', { items: [{ productId: '' }] }],
    ['a cursor of megabytes', { items: [], nextCursor: 'c'.repeat(5000) }],
  ])('refuses a page with %s as the platform misbehaving (retried)', async (_, body) => {
    page = body;
    await expect(client.listProducts('shop', 'key', null, 100)).rejects.toBeInstanceOf(
      PlatformUnavailableError,
    );
  });
});

/** A product update: PUT with the provider key, errors mapped as for a create. */
describe('PlatformClient.updateProduct', () => {
  let server: Server;
  let answer: { status: number; body: unknown };
  let seen: { method?: string; url?: string; headers: Record<string, unknown>; body: string };
  let client: PlatformClient;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        seen = { method: req.method, url: req.url, headers: req.headers, body };
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new PlatformClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 2000);
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  const update = () => client.updateProduct('shop/1', 'valid-key', 'prd_1', 'upd-key', { title: 'New' });

  it('PUTs the product with the bearer and idempotency key and reads id and version', async () => {
    answer = { status: 200, body: { productId: 'prd_1', title: 'New', version: 3 } };
    await expect(update()).resolves.toEqual({ productId: 'prd_1', version: 3 });
    expect(seen).toMatchObject({
      method: 'PUT',
      url: '/platform/v1/stores/shop%2F1/products/prd_1',
      headers: { authorization: 'Bearer valid-key', 'idempotency-key': 'upd-key' },
      body: JSON.stringify({ title: 'New' }),
    });
    answer = { status: 200, body: { productId: 'prd_1', version: '3' } };
    await expect(update()).resolves.toEqual({ productId: 'prd_1', version: null });
  });

  it('maps a 404 to PlatformRejectedError, a 503 or an answer without id to PlatformUnavailableError', async () => {
    answer = { status: 404, body: { error: 'PRODUCT_NOT_FOUND' } };
    await expect(update()).rejects.toBeInstanceOf(PlatformRejectedError);
    answer = { status: 503, body: { error: 'SIMULATED_FAULT' } };
    await expect(update()).rejects.toBeInstanceOf(PlatformUnavailableError);
    answer = { status: 200, body: { version: 2 } };
    await expect(update()).rejects.toBeInstanceOf(PlatformUnavailableError);
  });
});
