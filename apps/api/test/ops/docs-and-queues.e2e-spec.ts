import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { useTestDatabase } from '@listing/testing';
import { ERROR_CODES } from '../../src/error-codes';
import { killAll } from '../outbox/processes';
import { spawnApi, type RunningApi } from './ops-stack';

const t = useTestDatabase();
jest.setTimeout(120_000);

const ADMIN_TOKEN = 'admin-token-for-the-ops-suite-0123456789';
const METRICS_TOKEN = 'metrics-token-for-the-ops-suite-012345';
const ARTIFACTS = path.resolve(__dirname, '..', '..', '..', '..', '.artifacts');
const SCREENSHOTS = path.join(ARTIFACTS, 'screenshots');
/** Idempotency settings unlike the defaults: the document must state the running ones. */
const IDEMPOTENCY = {
  IDEMPOTENCY_TTL_HOURS: '60',
  IDEMPOTENCY_LOCK_TIMEOUT_MS: '4500',
  IDEMPOTENCY_RETRY_AFTER_SECONDS: '2',
};

/**
 * What Swagger UI renders when something is wrong with the document or the page, inside its
 * container: the "Errors" pane of spec and resolver errors and the unsupported-jsonSchemaDialect
 * warning (.errors-wrapper in an .error-wrapper), "Unable to render this definition"
 * (.version-pragma), a failed configuration (.failed-config), "Failed to load API definition."
 * (.loading-container), and any other element whose class names say error or warning.
 */
const SWAGGER_BANNERS = [
  '.errors-wrapper',
  '.error-wrapper',
  '.version-pragma',
  '.failed-config',
  '.loading-container',
  '[class*="error" i]',
  '[class*="warning" i]',
].join(', ');

/** The banners Swagger UI shows, as "class names: text". */
async function swaggerBanners(page: Page): Promise<string[]> {
  return page
    .locator('#swagger-ui')
    .locator(SWAGGER_BANNERS)
    .evaluateAll((elements) =>
      elements.map(
        (e) => `${e.className}: ${(e.textContent ?? '').replace(/\s+/g, ' ').trim().slice(0, 300)}`,
      ),
    );
}

const kebab = (code: string) => code.toLowerCase().replace(/_/g, '-');

function htmlText(html: string): string {
  return html
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

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
    api = await spawnApi(t, { ADMIN_TOKEN, METRICS_TOKEN, ...IDEMPOTENCY });
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
      jsonSchemaDialect: string;
      info: { description: string };
      'x-idempotency': unknown;
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
        schemas: { ProblemCode: { enum: string[] } } & Record<string, unknown>;
        securitySchemes: { bearer: { scheme: string } };
      };
    };
    expect(doc.openapi).toBe('3.1.0');
    // OpenAPI 3.1's default dialect: Swagger UI warns about any other value.
    expect(doc.jsonSchemaDialect).toBe('https://spec.openapis.org/oas/3.1/dialect/base');
    // Key retention and the wait bound, from the running configuration.
    expect(doc['x-idempotency']).toEqual({
      header: 'Idempotency-Key',
      retentionHours: 60,
      lockTimeoutMs: 4500,
      retryAfterSeconds: 2,
    });
    expect(doc.info.description).toContain('A key is kept 60 h after its first request');
    expect(doc.info.description).toContain('waits up to 4500 ms for it');
    expect(doc.info.description).toContain('`Retry-After: 2`');
    // Every code of the application's error catalogue, and nothing else.
    expect([...doc.components.schemas.ProblemCode.enum].sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(doc.components.securitySchemes.bearer.scheme).toBe('bearer');
    // A 202 documents its real body, { <resource>, operation }, and the operation's Location.
    const accepted = doc.paths['/v1/workspaces/{workspaceId}/publications']!.post!.responses['202'];
    expect(accepted).toMatchObject({
      headers: { Location: { $ref: '#/components/headers/OperationLocation' } },
      content: { 'application/json': { schema: { $ref: '#/components/schemas/PublicationAccepted' } } },
    });
    expect(doc.components.schemas.PublicationAccepted).toMatchObject({
      required: ['publication', 'operation'],
      properties: { operation: { $ref: '#/components/schemas/Operation' } },
    });

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

  it("answers a problem's `type` with its code's page, on the API itself", async () => {
    for (const [url, code] of [
      [`${api.url}/v1/no-such-route`, 'ROUTE_NOT_FOUND'],
      [`${api.url}/metrics`, 'UNAUTHENTICATED'],
    ] as const) {
      const res = await fetch(url);
      const problem = (await res.json()) as { type: string; code: string; status: number };
      expect(problem).toMatchObject({ code, type: `/docs/problems/${kebab(code)}` });
      // A reference relative to the request URI (RFC 9457 §3.1.1).
      const page = await fetch(new URL(problem.type, res.url));
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const text = htmlText(await page.text());
      expect(text).toContain(ERROR_CODES[code].description);
      expect(text).toContain(`<dd>${problem.status}</dd>`);
    }
    // Every catalogued code has its page: title, code, status, retryable, description.
    const index = htmlText(await (await fetch(`${api.url}/docs/problems`)).text());
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      const res = await fetch(`${api.url}/docs/problems/${kebab(code)}`);
      expect({ code, status: res.status }).toEqual({ code, status: 200 });
      const text = htmlText(await res.text());
      expect(text).toContain(`<code>${code}</code>`);
      expect(text).toContain(`<dd>${entry.status}</dd>`);
      expect(text).toContain(`<dt>retryable</dt><dd>${entry.retryable ? 'yes' : 'no'}`);
      expect(text).toContain(entry.description);
      expect(index).toContain(`href="/docs/problems/${kebab(code)}"`);
    }
    // An unknown code (or another spelling of a known one) is a 404 problem.
    for (const slug of ['no-such-code', 'ROUTE-NOT-FOUND', 'route_not_found']) {
      const res = await fetch(`${api.url}/docs/problems/${slug}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({ code: 'ROUTE_NOT_FOUND', status: 404 });
    }
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
    const pageErrors: string[] = [];
    docs.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(`console.error: ${message.text()}`);
    });
    docs.on('pageerror', (error) => pageErrors.push(`uncaught: ${error.message}`));
    await docs.goto(`${api.url}/docs`);
    await docs.locator('.swagger-ui .info .title').waitFor({ timeout: 30_000 });
    expect(await docs.locator('.swagger-ui .info .title').innerText()).toContain('Listing API');
    expect(await docs.locator('body').innerText()).toContain('IDEMPOTENCY_KEY_REUSED');
    expect(await docs.locator('.swagger-ui .info').innerText()).toContain('A key is kept 60 h');
    // Open the create-draft operation: its Idempotency-Key header parameter is listed.
    const create = docs.locator('[id="operations-product-drafts-ProductDrafts_create"]');
    await create.locator('.opblock-summary').first().click();
    await create.locator('.parameters').first().waitFor();
    await create.locator('.responses-wrapper').first().waitFor();
    expect(await create.innerText()).toContain('Idempotency-Key');
    await docs.waitForLoadState('networkidle');
    // Saved before the checks, so that a failing run shows what it saw.
    await docs.screenshot({ path: path.join(ARTIFACTS, 'docs.png'), fullPage: true });
    expect(await swaggerBanners(docs)).toEqual([]);
    expect(pageErrors).toEqual([]);
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
