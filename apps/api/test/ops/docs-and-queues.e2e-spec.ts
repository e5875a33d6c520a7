import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { chromium, type BrowserContext } from 'playwright-core';
import { useTestDatabase } from '@listing/testing';
import { ERROR_CODES } from '../../src/error-codes';
import { killAll } from '../outbox/processes';
import { spawnApi, type RunningApi } from './ops-stack';

const t = useTestDatabase();
jest.setTimeout(120_000);

const ADMIN_TOKEN = 'admin-token-for-the-ops-suite-0123456789';
const METRICS_TOKEN = 'metrics-token-for-the-ops-suite-012345';
const SCREENSHOTS = path.resolve(__dirname, '..', '..', '..', '..', '.artifacts', 'screenshots');

/**
 * Debian's chromium, headless, never a downloaded browser; the flags keep it off the network.
 * A persistent context on a fresh profile directory (playwright's form of --user-data-dir).
 */
async function launch(
  profile: string,
  options: { httpCredentials?: { username: string; password: string } } = {},
) {
  return chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    ...options,
  });
}

describe('/docs and /admin/queues', () => {
  let api: RunningApi;
  let browser: BrowserContext | null = null;
  let profile: string;
  const queueName = 'ops-board-demo';

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    profile = mkdtempSync(path.join(tmpdir(), 'ops-chromium-'));
    mkdirSync(path.join(profile, 'docs'));
    mkdirSync(path.join(profile, 'admin'));
    api = await spawnApi(t, { ADMIN_TOKEN, METRICS_TOKEN });
    // A queue with a waiting job, so the board has something to show.
    const connection = new Redis(t.info.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue(queueName, { connection, prefix: t.info.bullPrefix });
    await queue.add('demo-job', { n: 1 });
    await queue.close();
    connection.disconnect();
  });
  afterAll(async () => {
    await browser?.close();
    await killAll();
    rmSync(profile, { recursive: true, force: true });
  });

  it('serves an OpenAPI 3.1 document with idempotency, problem codes, If-Match, 202 + operation and bearer auth', async () => {
    const res = await fetch(`${api.url}/docs/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<
        string,
        Record<
          string,
          {
            parameters?: Array<{ $ref?: string; name?: string }>;
            security?: unknown;
            responses: Record<string, unknown>;
            requestBody?: unknown;
          }
        >
      >;
      components: {
        schemas: { ProblemCode: { enum: string[] }; Operation: unknown };
        responses: { Accepted: unknown };
        securitySchemes: { bearer: { scheme: string } };
      };
    };
    expect(doc.openapi).toBe('3.1.0');
    // Every code of the application's error catalogue, and nothing else.
    expect([...doc.components.schemas.ProblemCode.enum].sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(doc.components.securitySchemes.bearer.scheme).toBe('bearer');
    expect(doc.components.responses.Accepted).toBeDefined();
    expect(doc.components.schemas.Operation).toBeDefined();

    const create = doc.paths['/v1/workspaces/{workspaceId}/product-drafts']!.post!;
    expect(create.parameters).toContainEqual({ $ref: '#/components/parameters/IdempotencyKey' });
    expect(create.security).toEqual([{ bearer: [] }]);
    expect(create.requestBody).toMatchObject({
      content: { 'application/json': { schema: { properties: { title: { type: 'string' } } } } },
    });
    expect(JSON.stringify(create.responses['409'])).toContain('IDEMPOTENCY_KEY_REUSED');
    const patch = doc.paths['/v1/workspaces/{workspaceId}/product-drafts/{draftId}']!.patch!;
    expect(patch.parameters).toContainEqual({ $ref: '#/components/parameters/IfMatch' + 'Required' });
    expect(JSON.stringify(patch.responses['412'])).toContain('REVISION_MISMATCH');
    // Auth routes do not use the mechanism and need no token.
    const login = doc.paths['/v1/auth/login']!.post!;
    expect(login.security).toBeUndefined();
    expect(JSON.stringify(login.parameters ?? [])).not.toContain('Idempotency');
  });

  it('refuses /admin/queues without the admin token', async () => {
    expect((await fetch(`${api.url}/admin/queues`)).status).toBe(401);
    expect(
      (
        await fetch(`${api.url}/admin/queues`, {
          headers: { authorization: 'Bearer not-the-admin-token-at-all' },
        })
      ).status,
    ).toBe(401);
    expect(
      (await fetch(`${api.url}/admin/queues`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
        .status,
    ).toBe(200);
    // A body the dashboard's routes cannot take is a 415 there too (its own error handler reads
    // the error's status), rewritten to problem+json.
    const refused = await fetch(`${api.url}/admin/queues/api/queues/pause`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      body: 'hi',
    });
    expect(refused.status).toBe(415);
    expect(await refused.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415 });
    // The dashboard's own errors and the docs' missing files are problem+json, without internals.
    for (const [path, headers] of [
      ['/admin/queues/api/queues/no-such-queue/no-such-job', { authorization: `Bearer ${ADMIN_TOKEN}` }],
      ['/docs/assets/no-such-file.js', {}],
    ] as const) {
      const res = await fetch(`${api.url}${path}`, { headers });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const text = await res.text();
      expect(text).not.toMatch(/stack|at .*\.js:\d+/);
    }
  });

  it('with METRICS_TOKEN set, /metrics answers its holder only (Bearer, or Basic for a browser)', async () => {
    const denied = await fetch(`${api.url}/metrics`);
    expect(denied.status).toBe(401);
    expect(denied.headers.get('content-type')).toContain('application/problem+json');
    expect(await denied.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(
      (await fetch(`${api.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status,
    ).toBe(401);
    const scraped = await fetch(`${api.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('listing_http_requests_total');
    const basic = `Basic ${Buffer.from(`prometheus:${METRICS_TOKEN}`).toString('base64')}`;
    expect((await fetch(`${api.url}/metrics`, { headers: { authorization: basic } })).status).toBe(200);
  });

  it('shows the docs and the queue dashboard in a real browser', async () => {
    browser = await launch(path.join(profile, 'docs'));
    const docs = await browser.newPage();
    await docs.goto(`${api.url}/docs`);
    await docs.locator('.swagger-ui .info .title').waitFor({ timeout: 30_000 });
    expect(await docs.locator('.swagger-ui .info .title').innerText()).toContain('Listing API');
    expect(await docs.locator('body').innerText()).toContain('IDEMPOTENCY_KEY_REUSED');
    // Open the create-draft operation: its Idempotency-Key header parameter is listed.
    const create = docs.locator('[id="operations-product-drafts-ProductDrafts_create"]');
    await create.locator('.opblock-summary').first().click();
    await create.locator('.parameters').first().waitFor();
    expect(await create.innerText()).toContain('Idempotency-Key');
    await docs.screenshot({ path: path.join(SCREENSHOTS, 'docs.png'), fullPage: false });
    // Without credentials the board is refused in the browser's context too (a navigation
    // would stop at chromium's auth prompt, which headless mode turns into a net error).
    const denied = await docs.request.get(`${api.url}/admin/queues`);
    expect(denied.status()).toBe(401);
    expect(denied.headers()['www-authenticate']).toMatch(/^Basic/);
    await browser.close();

    browser = await launch(path.join(profile, 'admin'), {
      httpCredentials: { username: 'admin', password: ADMIN_TOKEN },
    });
    const board = await browser.newPage();
    await board.goto(`${api.url}/admin/queues`);
    await board.getByText(queueName).first().waitFor({ timeout: 30_000 });
    expect(await board.locator('body').innerText()).toContain(queueName);
    await board.screenshot({ path: path.join(SCREENSHOTS, 'admin-queues.png'), fullPage: false });
  });
});
