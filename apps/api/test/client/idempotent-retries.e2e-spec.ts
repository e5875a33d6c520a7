import { randomUUID } from 'node:crypto';
import { createListingClient, type ListingClient } from '@listing/client';
import { CuttableProxy, freeTcpPort, useTestDatabase } from '@listing/testing';
import { killAll } from '../outbox/processes';
import { spawnApiProcess } from '../support/api-process';
import { startApi, type InProcessApi } from '../support/in-process-api';
import { recordingFetch } from './recording-fetch';
import { ResponseDroppingProxy } from './response-dropping-proxy';

const t = useTestDatabase();
jest.setTimeout(60_000);

/** Backoff so short that only a server's Retry-After can make a wait last. */
const NO_BACKOFF = { baseDelayMs: 1, maxDelayMs: 1 };

/**
 * Each retry rule of `client.idempotent()` (packages/client) against the real API: what it
 * retries (409 IN_PROGRESS honouring Retry-After, 503, a lost response) always under the same
 * key, so the logical call runs once, and what it never retries (422, 409 KEY_REUSED, 404).
 */
describe('@listing/client idempotent(): the retry rules against the real API', () => {
  let api: InProcessApi;
  let token: string;
  let workspaceId: string;

  const clientOf = (baseUrl: string) => {
    const recorder = recordingFetch();
    return { client: createListingClient({ baseUrl, token, fetch: recorder.fetch }), sent: recorder.sent };
  };
  const createDraft = (client: ListingClient, title: string, options = {}) =>
    client.idempotent(
      'post',
      '/v1/workspaces/{workspaceId}/product-drafts',
      { params: { path: { workspaceId } }, body: { title } },
      { ...NO_BACKOFF, ...options },
    );
  const drafts = async (title: string) =>
    (await t.owner.query(`select count(*)::int as n from records where payload->>'title' = $1`, [title]))
      .rows[0].n as number;

  beforeAll(async () => {
    api = await startApi(t.info);
    const anonymous = createListingClient({ baseUrl: api.url });
    const { data, error } = await anonymous.POST('/v1/auth/register', {
      body: { email: `${randomUUID()}@example.test`, password: `pw-${randomUUID()}` },
    });
    if (!data) throw new Error(`register: ${JSON.stringify(error)}`);
    token = data.accessToken;
    workspaceId = data.workspace.id;
  });
  afterAll(async () => {
    await api?.close();
    await killAll();
  });

  it('409 IDEMPOTENCY_REQUEST_IN_PROGRESS: retried with the same key after Retry-After, ends in the first request’s result (replayed)', async () => {
    const leader = await spawnApiProcess('api-leader', t.info, {
      TEST_FAULTS: 'idempotency.after-reserve=hold:2500',
    });
    const follower = await spawnApiProcess('api-follower', t.info, {
      IDEMPOTENCY_LOCK_TIMEOUT_MS: '300',
      IDEMPOTENCY_RETRY_AFTER_SECONDS: '1',
    });
    const key = randomUUID();
    const title = `held ${key}`;
    const first = clientOf(leader.url).client.POST('/v1/workspaces/{workspaceId}/product-drafts', {
      params: { path: { workspaceId }, header: { 'Idempotency-Key': key } },
      body: { title },
    });
    await leader.proc.waitForOutput(/fault:idempotency\.after-reserve:hold/);

    const { client, sent } = clientOf(follower.url);
    const result = await createDraft(client, title, { key });
    const firstResult = await first;

    expect(firstResult.response.status).toBe(201);
    expect(result).toMatchObject({ status: 201, replayed: true, key, data: firstResult.data });
    expect(result.attempts).toBeGreaterThanOrEqual(2);
    expect(sent).toHaveLength(result.attempts);
    expect(sent.map((s) => s.key)).toEqual(sent.map(() => key));
    const busy = sent.slice(0, -1);
    expect(busy.map((s) => [s.status, s.retryAfter])).toEqual(busy.map(() => [409, '1']));
    for (let i = 1; i < sent.length; i++) {
      // Retry-After: 1 honoured (the backoff alone would wait ≤ 1 ms).
      expect(sent[i]!.sentAt - sent[i - 1]!.answeredAt!).toBeGreaterThanOrEqual(990);
    }
    expect(await drafts(title)).toBe(1);
  });

  it('503 while PostgreSQL is unreachable: retried under the same key once it is back; the call runs exactly once', async () => {
    const proxy = new CuttableProxy(await freeTcpPort(), {
      host: '127.0.0.1',
      port: Number(new URL(t.info.appUrl).port || 5432),
    });
    await proxy.open();
    const outage = await startApi(t.info, { DATABASE_URL: proxy.urlThrough(t.info.appUrl) });
    try {
      const { client, sent } = clientOf(outage.url);
      await proxy.cut();
      const title = `outage ${randomUUID()}`;
      let restored: Promise<void> | undefined;
      const result = await createDraft(client, title, {
        onAttempt: ({ status }: { status?: number }) => {
          if (status === 503) restored ??= proxy.open();
        },
      });
      await restored;

      expect(result).toMatchObject({ status: 201, replayed: false });
      expect(result.attempts).toBeGreaterThanOrEqual(2);
      expect(sent[0]).toMatchObject({ status: 503, retryAfter: '1' });
      expect(sent.at(-1)!.status).toBe(201);
      expect(sent.map((s) => s.key)).toEqual(sent.map(() => result.key));
      expect(sent[1]!.sentAt - sent[0]!.answeredAt!).toBeGreaterThanOrEqual(990); // Retry-After: 1
      expect(await drafts(title)).toBe(1);
    } finally {
      await outage.close();
      await proxy.cut();
    }
  });

  it('a network error (the answer lost after the API ran the request): retried with the same key → the first result, replayed; runs once', async () => {
    const target = new URL(api.url);
    const proxy = new ResponseDroppingProxy({ host: target.hostname, port: Number(target.port) }, 1);
    const { client, sent } = clientOf(await proxy.listen());
    try {
      const title = `lost answer ${randomUUID()}`;
      const result = await createDraft(client, title);

      expect(proxy.dropped).toBe(1);
      expect(result).toMatchObject({ status: 201, replayed: true, attempts: 2 });
      expect(sent.map((s) => [s.key, s.status])).toEqual([
        [result.key, undefined], // no answer
        [result.key, 201],
      ]);
      expect(await drafts(title)).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('a network error (connection refused): retried with the same key until the API is reachable', async () => {
    const target = new URL(api.url);
    const proxy = new CuttableProxy(await freeTcpPort(), {
      host: target.hostname,
      port: Number(target.port),
    });
    const { client, sent } = clientOf(proxy.urlThrough(api.url));
    try {
      const title = `refused ${randomUUID()}`;
      let opened: Promise<void> | undefined;
      const result = await createDraft(client, title, {
        baseDelayMs: 200,
        onAttempt: ({ error }: { error?: Error }) => {
          if (error) opened ??= proxy.open();
        },
      });
      await opened;

      expect(result).toMatchObject({ status: 201, replayed: false, attempts: 2 });
      expect(sent.map((s) => [s.key, s.status])).toEqual([
        [result.key, undefined],
        [result.key, 201],
      ]);
      expect(await drafts(title)).toBe(1);
    } finally {
      await proxy.cut();
    }
  });

  it('never retried: 422 VALIDATION_FAILED, 409 IDEMPOTENCY_KEY_REUSED, 404 (attempts = 1)', async () => {
    const { client, sent } = clientOf(api.url);

    const invalid = await client.idempotent(
      'post',
      '/v1/workspaces/{workspaceId}/product-drafts',
      // @ts-expect-error: a title is required (sent anyway: the API's 422 is the point)
      { params: { path: { workspaceId } }, body: { description: 'no title' } },
      NO_BACKOFF,
    );
    expect(invalid).toMatchObject({ status: 422, attempts: 1, error: { code: 'VALIDATION_FAILED' } });

    const first = await createDraft(client, `reused ${randomUUID()}`);
    expect(first.status).toBe(201);
    const reused = await createDraft(client, 'another body', { key: first.key });
    expect(reused).toMatchObject({
      status: 409,
      attempts: 1,
      key: first.key,
      error: { code: 'IDEMPOTENCY_KEY_REUSED' },
    });

    const missing = await client.idempotent(
      'patch',
      '/v1/workspaces/{workspaceId}/product-drafts/{draftId}',
      {
        params: { path: { workspaceId, draftId: randomUUID() }, header: { 'If-Match': '"1"' } },
        body: { title: 'x' },
      },
      NO_BACKOFF,
    );
    expect(missing).toMatchObject({ status: 404, attempts: 1, error: { code: 'RESOURCE_NOT_FOUND' } });

    const otherWorkspace = await client.idempotent(
      'post',
      '/v1/workspaces/{workspaceId}/product-drafts',
      { params: { path: { workspaceId: randomUUID() } }, body: { title: 'nowhere' } },
      NO_BACKOFF,
    );
    expect(otherWorkspace).toMatchObject({
      status: 404,
      attempts: 1,
      error: { code: 'WORKSPACE_NOT_FOUND' },
    });

    expect(sent.map((s) => s.status)).toEqual([422, 201, 409, 404, 404]);
  });
});
