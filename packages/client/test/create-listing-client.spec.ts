import { createListingClient, NetworkError, RetriesExhaustedError } from '../src';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const WS = '00000000-0000-4000-8000-000000000001';

interface Seen {
  method: string;
  url: string;
  key: string | null;
  authorization: string | null;
  body: string;
}

/** A fetch answering the scripted outcomes in order, recording every request. */
function fakeFetch(...outcomes: Array<(() => Response) | Error>) {
  const seen: Seen[] = [];
  const fetch = async (request: Request) => {
    seen.push({
      method: request.method,
      url: request.url,
      key: request.headers.get('idempotency-key'),
      authorization: request.headers.get('authorization'),
      body: await request.text(),
    });
    const next = outcomes.shift();
    if (!next) throw new Error('script exhausted');
    if (next instanceof Error) throw next;
    return next();
  };
  return { fetch, seen };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': status < 400 ? 'application/json' : 'application/problem+json', ...headers },
    });
const cutOff = () => () =>
  new Response(
    new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"id":'));
        controller.error(new TypeError('terminated'));
      },
    }),
    { status: 201, headers: { 'content-type': 'application/json' } },
  );
const fast = { baseDelayMs: 1, maxDelayMs: 1 };

describe('createListingClient', () => {
  it('idempotent(): one UUID v4 key on every attempt, retried through a network error, a cut-off body and a 503', async () => {
    const { fetch, seen } = fakeFetch(
      new TypeError('fetch failed'),
      cutOff(),
      json(503, { code: 'SERVICE_UNAVAILABLE', status: 503 }, { 'retry-after': '0' }),
      json(201, { id: 'd-1' }, { 'idempotent-replayed': 'true' }),
    );
    const client = createListingClient({ baseUrl: 'http://api.test', token: 't0k3n', fetch });
    const result = await client.idempotent(
      'post',
      '/v1/workspaces/{workspaceId}/product-drafts',
      { params: { path: { workspaceId: WS } }, body: { title: 'Blue mug' } },
      fast,
    );
    expect(result).toMatchObject({ status: 201, attempts: 4, replayed: true, data: { id: 'd-1' } });
    expect(result.key).toMatch(UUID_V4);
    expect(seen).toHaveLength(4);
    for (const s of seen) {
      expect(s).toEqual({
        method: 'POST',
        url: `http://api.test/v1/workspaces/${WS}/product-drafts`,
        key: result.key,
        authorization: 'Bearer t0k3n',
        body: '{"title":"Blue mug"}',
      });
    }
  });

  it('a new key per logical call, unless the caller passes one', async () => {
    const { fetch, seen } = fakeFetch(json(201, {}), json(201, {}), json(201, {}));
    const client = createListingClient({ baseUrl: 'http://api.test', fetch });
    const call = (key?: string) =>
      client.idempotent(
        'post',
        '/v1/workspaces/{workspaceId}/product-drafts',
        { params: { path: { workspaceId: WS } }, body: { title: 'x' } },
        { key },
      );
    const [a, b] = [await call(), await call()];
    expect(a.key).not.toBe(b.key);
    const mine = await call('5f0c7d2e-0d3a-4b6e-9a43-2b1f3c4d5e6f');
    expect(mine.key).toBe('5f0c7d2e-0d3a-4b6e-9a43-2b1f3c4d5e6f');
    expect(seen.map((s) => s.key)).toEqual([a.key, b.key, mine.key]);
    expect(seen[0]!.authorization).toBeNull();
  });

  it('a 4xx is returned as its typed error, after one attempt', async () => {
    const problem = {
      code: 'VALIDATION_FAILED',
      status: 422,
      title: 'Unprocessable',
      type: '/docs/problems/x',
    };
    const { fetch, seen } = fakeFetch(json(422, problem), json(201, {}));
    const client = createListingClient({ baseUrl: 'http://api.test', fetch });
    const result = await client.idempotent('post', '/v1/workspaces/{workspaceId}/stores', {
      params: { path: { workspaceId: WS } },
      body: { platform: 'sim', storeExternalId: 's', apiKey: 'k', apiSecret: 's' },
    });
    expect(result).toMatchObject({ status: 422, attempts: 1, replayed: false, error: problem });
    expect(result.data).toBeUndefined();
    expect(seen).toHaveLength(1);
  });

  it('retries exhausted: the error carries the key to resend with', async () => {
    const { fetch } = fakeFetch(new TypeError('fetch failed'), new TypeError('fetch failed'));
    const client = createListingClient({
      baseUrl: 'http://api.test',
      fetch,
      retry: { ...fast, maxAttempts: 2 },
    });
    const error = await client.idempotent('post', '/v1/workspaces', { body: { name: 'w' } }).then(
      () => undefined,
      (e: unknown) => e as RetriesExhaustedError,
    );
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect(error).toMatchObject({ attempts: 2, lastStatus: undefined, request: 'POST /v1/workspaces' });
    expect(error?.cause).toBeInstanceOf(NetworkError);
    expect(error?.key).toMatch(UUID_V4);
  });

  it('getToken is asked before every request (a refreshed token is used at once)', async () => {
    const { fetch, seen } = fakeFetch(json(200, { items: [] }), json(200, { items: [] }));
    let token = 'first';
    const client = createListingClient({ baseUrl: 'http://api.test', getToken: async () => token, fetch });
    await client.GET('/v1/workspaces');
    token = 'second';
    await client.GET('/v1/workspaces');
    expect(seen.map((s) => s.authorization)).toEqual(['Bearer first', 'Bearer second']);
    expect(() => createListingClient({ baseUrl: 'x', token: 'a', getToken: () => 'b' })).toThrow(TypeError);
  });

  it('types: only routes that take an Idempotency-Key, and the key is not the caller’s to send', () => {
    const client = createListingClient({ baseUrl: 'http://api.test' });
    // Checked by `pnpm typecheck`; never called.
    const typed = () => {
      // @ts-expect-error: a GET is not an idempotent command
      void client.idempotent('get', '/v1/workspaces', {});
      // @ts-expect-error: login ignores Idempotency-Key, so retrying it is not this helper's business
      void client.idempotent('post', '/v1/auth/login', { body: { email: 'a@b.c', password: 'x' } });
      void client.idempotent('post', '/v1/workspaces/{workspaceId}/publications', {
        // @ts-expect-error: the path parameter is required
        params: {},
        body: { draftId: WS, revision: 1, storeId: WS },
      });
      void client.idempotent('patch', '/v1/workspaces/{workspaceId}/product-drafts/{draftId}', {
        params: { path: { workspaceId: WS, draftId: WS }, header: { 'If-Match': '"1"' } },
        body: { title: 'renamed' },
      });
    };
    expect(typeof typed).toBe('function');
  });
});
