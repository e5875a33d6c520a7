import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { useTestDatabase } from '@listing/testing';
import { registerUser, type RegisteredUser } from '../support/api-client';
import { startApi, type InProcessApi } from '../support/in-process-api';

const t = useTestDatabase();

/** Sends raw bytes over TCP and returns the whole answer (for requests fetch refuses to send). */
function rawHttp(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    // Written, not ended: the server answers and closes (requests here say Connection: close or
    // are unparsable); a half-closed socket would be dropped before an asynchronous answer.
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

/** Sends a request's head only and resolves with the answer's head (the body is never sent). */
function headOnly(url: string, head: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let out = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer before the body was sent; got ${JSON.stringify(out)}`));
    }, 10_000);
    socket.on('data', (d: Buffer) => {
      out += d.toString('latin1');
      if (out.includes('\r\n\r\n')) {
        clearTimeout(timer);
        socket.destroy();
        resolve(out);
      }
    });
    socket.on('error', reject);
  });
}

/**
 * Mistakes the framework catches before any controller runs still answer problem+json with a
 * stable code, and never echo the URL, headers or body back (they may carry tokens).
 */
describe('error contract at the edges of the HTTP stack', () => {
  let api: InProcessApi;
  let alice: RegisteredUser;

  beforeAll(async () => {
    api = await startApi(t.info);
    alice = await registerUser(api.url);
  });
  afterAll(async () => {
    await api?.close();
  });

  const expectProblem = (
    res: { status: number; headers: Headers; text: string },
    status: number,
    code: string,
  ) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(res.text)).toMatchObject({ status, code });
  };

  it('an unknown route answers 404 ROUTE_NOT_FOUND without echoing the URL', async () => {
    const secret = `lat_${randomUUID()}`;
    const res = await alice.client.get(`/v1/nope?access_token=${secret}`);
    expectProblem(res, 404, 'ROUTE_NOT_FOUND');
    expect(res.text).not.toContain(secret);
    expect(res.text).not.toContain('/v1/nope');
  });

  it('a URL that is not valid percent-encoding answers problem+json without echoing it', async () => {
    const secret = `lrt_${randomUUID()}`;
    const res = await fetch(`${api.url}/v1/%zz?refresh_token=${secret}`);
    const text = await res.text();
    expectProblem({ status: res.status, headers: res.headers, text }, 400, 'BAD_REQUEST');
    expect(text).not.toContain(secret);
  });

  it('a malformed request line or header answers problem+json and echoes nothing', async () => {
    const secret = `lat_${randomUUID()}`;
    const answer = await rawHttp(
      api.url,
      `GET /v1/workspaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nbroken header line\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/content-type: application\/problem\+json/i);
    expect(answer).toContain('"code":"BAD_REQUEST"');
    expect(answer).not.toContain(secret);
  });

  it('an over-long path segment and an unknown method answer problem+json too', async () => {
    const long = await alice.client.get(`/v1/workspaces/${'A'.repeat(200)}/product-drafts`);
    expectProblem(long, 414, 'URI_TOO_LONG');
    expect(long.text).not.toContain('AAAAAAAAAA');
    const answer = await rawHttp(api.url, `FOO /v1/workspaces HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/content-type: application\/problem\+json/i);
  });

  it('raw bytes are accepted only by the media content route: elsewhere 415 before the body is read', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 7); // above BODY_LIMIT_BYTES, below MEDIA_MAX_BYTES
    for (const type of ['application/octet-stream', 'image/png']) {
      const res = await fetch(`${api.url}/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': type },
        body: big,
      });
      const text = await res.text();
      expectProblem({ status: res.status, headers: res.headers, text }, 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
    const drafts = await fetch(`${api.url}/v1/workspaces/${alice.workspaceId}/product-drafts`, {
      method: 'POST',
      headers: {
        'content-type': 'application/octet-stream',
        authorization: `Bearer ${alice.accessToken}`,
        'idempotency-key': randomUUID(),
      },
      body: Buffer.from('{"title":"x"}'),
    });
    const text = await drafts.text();
    expectProblem({ status: drafts.status, headers: drafts.headers, text }, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect((await t.owner.query('select count(*)::int as n from idempotency_requests')).rows[0].n).toBe(0);
  });

  it('a raw upload (up to MEDIA_MAX_BYTES) is refused before its body is read when its caller is', async () => {
    const content = `/v1/workspaces/${alice.workspaceId}/media/${randomUUID()}/content`;
    const head = (authorization: string) =>
      `PUT ${content} HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: image/png\r\n` +
      `Content-Length: 20000000\r\n\r\n`;
    expect(await headOnly(api.url, head(''))).toMatch(/^HTTP\/1\.1 401 /);
    expect(await headOnly(api.url, head(`Authorization: Bearer ${'x'.repeat(40)}\r\n`))).toMatch(
      /^HTTP\/1\.1 401 /,
    );
    // a member of another workspace: the same 404 as for any route of a workspace not theirs
    const mallory = await registerUser(api.url);
    expect(await headOnly(api.url, head(`Authorization: Bearer ${mallory.accessToken}\r\n`))).toMatch(
      /^HTTP\/1\.1 404 /,
    );
  });

  it('bodies other than JSON are a 415 on JSON routes, and create nothing', async () => {
    const drafts = `/v1/workspaces/${alice.workspaceId}/product-drafts`;
    for (const [type, body] of [
      ['application/x-www-form-urlencoded', 'title=form'],
      ['text/plain', '{"title":"text"}'],
      ['multipart/form-data; boundary=x', '--x\r\n\r\ntitle\r\n--x--'],
    ]) {
      const res = await alice.client.request('POST', drafts, {
        headers: { 'content-type': type!, 'idempotency-key': randomUUID() },
        rawBody: body,
      });
      expectProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
    expect((await t.owner.query('select count(*)::int as n from records')).rows[0].n).toBe(0);
    // and the media content route takes raw bytes only, and says so
    const media = await alice.client.request(
      'PUT',
      `/v1/workspaces/${alice.workspaceId}/media/${randomUUID()}/content`,
      { body: { bytes: 'not raw' } },
    );
    expectProblem(media, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(media.body).toMatchObject({ detail: expect.stringMatching(/octet-stream/) });
    // bytes with no type at all: the same answer, not a hint to send JSON
    const untyped = await rawHttp(
      api.url,
      `PUT /v1/workspaces/${alice.workspaceId}/media/${randomUUID()}/content HTTP/1.1\r\nHost: x\r\n` +
        `Authorization: Bearer ${alice.accessToken}\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc`,
    );
    expect(untyped).toMatch(/^HTTP\/1\.1 415 /);
    expect(untyped).toMatch(/octet-stream/);
    expect(untyped).not.toMatch(/application\/json"/);
    // an unknown route is a 404 whatever it was sent
    const nowhere = await alice.client.request('POST', '/v1/nope', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      rawBody: 'a=1',
    });
    expectProblem(nowhere, 404, 'ROUTE_NOT_FOUND');
    const malformed = await rawHttp(
      api.url,
      `POST /v1/nope HTTP/1.1\r\nHost: x\r\nContent-Type: text/\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=1`,
    );
    expect(malformed).toMatch(/^HTTP\/1\.1 404 /);
    // and a body under a type that is none gets the route's own answer, not Fastify's
    const untypedJson = await alice.client.request('POST', drafts, {
      headers: { 'content-type': 'text/', 'idempotency-key': randomUUID() },
      rawBody: '{"title":"x"}',
    });
    expectProblem(untypedJson, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(untypedJson.body).toMatchObject({ detail: 'send application/json' });
  });

  it('an empty body is no body, whatever type it claims (curl -d "" sends a form type)', async () => {
    const bob = await registerUser(api.url);
    const logout = await bob.client.request('POST', '/v1/auth/logout', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      rawBody: '',
    });
    expect(logout.status).toBe(204);
    // fetch's default for a string body is text/plain: empty, it is no body either (the feature
    // route's body is optional), and so is an empty chunked body
    const draftId = (
      await alice.client.post<{ id: string }>(
        `/v1/workspaces/${alice.workspaceId}/product-drafts`,
        { title: ' spaced  title ' },
        { key: randomUUID() },
      )
    ).body.id;
    const feature = await fetch(
      `${api.url}/v1/workspaces/${alice.workspaceId}/product-drafts/${draftId}/features/normalize-text/executions`,
      { method: 'POST', headers: { authorization: `Bearer ${alice.accessToken}` }, body: '' },
    );
    expect(feature.status).toBe(201);
    const carol = await registerUser(api.url);
    const chunked = await rawHttp(
      api.url,
      `POST /v1/auth/logout HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${carol.accessToken}\r\n` +
        `Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
    );
    expect(chunked).toMatch(/^HTTP\/1\.1 204 /);
    // nor does a type that is no media type at all make an empty body something
    for (const type of ['not a type', ';', 'text/']) {
      const dave = await registerUser(api.url);
      const malformed = await rawHttp(
        api.url,
        `POST /v1/auth/logout HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${dave.accessToken}\r\n` +
          `Content-Type: ${type}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      );
      expect([type, malformed.slice(0, 12)]).toEqual([type, 'HTTP/1.1 204']);
    }
    const erin = await registerUser(api.url);
    const malformedChunked = await rawHttp(
      api.url,
      `POST /v1/auth/logout HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${erin.accessToken}\r\n` +
        `Content-Type: text/\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
    );
    expect(malformedChunked).toMatch(/^HTTP\/1\.1 204 /);
    // a route that needs a body says what is missing
    const draft = await alice.client.request('POST', `/v1/workspaces/${alice.workspaceId}/product-drafts`, {
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      rawBody: '',
    });
    expectProblem(draft, 422, 'VALIDATION_FAILED');
  });

  it('JSON nested absurdly deep is a 422 on every route, idempotent ones included (not a stack overflow)', async () => {
    const deep = `{"title":"x","attributes":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const before = (await t.owner.query('select count(*)::int as n from idempotency_requests')).rows[0].n;
    for (const path of [`/v1/workspaces/${alice.workspaceId}/product-drafts`, '/v1/workspaces']) {
      const res = await alice.client.request('POST', path, {
        headers: { 'idempotency-key': randomUUID() },
        rawBody: deep,
      });
      expectProblem(res, 422, 'VALIDATION_FAILED');
      // refused by the parser, before validation would have said anything else
      expect(res.body).toMatchObject({
        errors: [{ path: '(body)', message: 'nested deeper than 32 levels' }],
      });
    }
    expect((await t.owner.query('select count(*)::int as n from idempotency_requests')).rows[0].n).toBe(
      before,
    );
  });

  it('a number beyond a double (1e400) is the same 422 naming its path on every route, idempotent or not', async () => {
    // JSON.parse reads it as Infinity, which the idempotency fingerprint (RFC 8785) cannot encode:
    // it was a 500 on @Idempotent routes, with or without a key, and a 422 elsewhere.
    const idempotency = async () =>
      (await t.owner.query('select count(*)::int as n from idempotency_requests')).rows[0].n;
    const records = async () => (await t.owner.query('select count(*)::int as n from records')).rows[0].n;
    const [idempotencyBefore, recordsBefore] = [await idempotency(), await records()];
    const drafts = `/v1/workspaces/${alice.workspaceId}/product-drafts`;
    const members = `/v1/workspaces/${alice.workspaceId}/members`;
    for (const number of ['1e400', '-1e400']) {
      const body = `{"title":"x","price":{"amount":${number},"currency":"EUR"},"email":"a@example.com","role":"member"}`;
      for (const [path, key] of [
        [drafts, randomUUID()], // @Idempotent, with a key
        [drafts, undefined], // @Idempotent, without one (it is optional there)
        ['/v1/workspaces', randomUUID()], // @Idempotent, key honoured without runPrepared
        [members, undefined], // not idempotent
      ] as const) {
        const res = await alice.client.request('POST', path, { rawBody: body, ...(key ? { key } : {}) });
        expectProblem(res, 422, 'VALIDATION_FAILED');
        expect(res.body).toMatchObject({
          errors: [{ path: 'price.amount', message: expect.stringMatching(/out of range/) }],
        });
      }
    }
    expect(await idempotency()).toBe(idempotencyBefore);
    expect(await records()).toBe(recordsBefore);
  });

  it('the JSON parser says what is wrong: not UTF-8 or not JSON is a 400, a prototype key a 422', async () => {
    const drafts = `/v1/workspaces/${alice.workspaceId}/product-drafts`;
    const send = (body: Buffer | string) =>
      fetch(`${api.url}${drafts}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${alice.accessToken}`,
          'idempotency-key': randomUUID(),
        },
        body,
      }).then(async (res) => ({ status: res.status, headers: res.headers, text: await res.text() }));
    const records = async () => (await t.owner.query('select count(*)::int as n from records')).rows[0].n;
    const before = await records();
    const notUtf8 = await send(
      Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
    );
    expectProblem(notUtf8, 400, 'INVALID_JSON');
    expect(JSON.parse(notUtf8.text).detail).toMatch(/UTF-8/);
    expectProblem(await send('{"title":'), 400, 'INVALID_JSON');
    const proto = await send('{"title":"x","__proto__":{"admin":true}}');
    expectProblem(proto, 422, 'VALIDATION_FAILED');
    expect(proto.text).toContain('__proto__');
    expect(await records()).toBe(before);
  });

  it('ids in bodies are compared in any UUID spelling (an upper-case draft id is not a 500)', async () => {
    const draft = await alice.client.post<{ id: string }>(
      `/v1/workspaces/${alice.workspaceId}/product-drafts`,
      { title: 'upper' },
      { key: randomUUID() },
    );
    expect(draft.status).toBe(201);
    const task = await alice.client.post(
      `/v1/workspaces/${alice.workspaceId}/ai-tasks`,
      { kind: 'text', draftId: draft.body.id.toUpperCase(), revision: 1 },
      { key: randomUUID() },
    );
    expect(task.status).toBe(202);
  });

  it('an id of UUID shape that no RFC version allows is an unknown id, in a body as in a path', async () => {
    // The database's uuid type takes any 8-4-4-4-12 hex, and so do path ids; bodies once asked for
    // RFC version digits, so the same id was a 422 in a body and a 404 in a path.
    const unversioned = '00000000-0000-0000-0000-00000000000a';
    const aiTask = (draftId: string) =>
      alice.client.post(
        `/v1/workspaces/${alice.workspaceId}/ai-tasks`,
        { kind: 'text', draftId, revision: 1 },
        { key: randomUUID() },
      );
    const unknown = await aiTask(randomUUID());
    expect(unknown.status).toBe(404);
    const odd = await aiTask(unversioned);
    expect([odd.status, odd.body.code]).toEqual([unknown.status, unknown.body.code]);
    expectProblem(await aiTask('not-a-uuid'), 422, 'VALIDATION_FAILED');
    const path = await alice.client.get(`/v1/workspaces/${alice.workspaceId}/product-drafts/${unversioned}`);
    expect(path.status).toBe(404);
  });

  it('If-Match follows RFC 9110: lists and * match, weak or foreign tags fail the precondition (412)', async () => {
    const drafts = `/v1/workspaces/${alice.workspaceId}/product-drafts`;
    const draft = await alice.client.post<{ id: string }>(drafts, { title: 'etag' }, { key: randomUUID() });
    const patch = (ifMatch: string) =>
      alice.client.request<{ revision: number }>('PATCH', `${drafts}/${draft.body.id}`, {
        headers: { 'if-match': ifMatch, 'idempotency-key': randomUUID() },
        body: { description: ifMatch },
      });
    expectProblem(await patch('W/"1"'), 412, 'REVISION_MISMATCH');
    expectProblem(await patch('"01"'), 412, 'REVISION_MISMATCH');
    expectProblem(await patch('"1'), 400, 'IF_MATCH_INVALID');
    expect((await patch('"7", "1"')).body.revision).toBe(2);
    expect((await patch('*')).body.revision).toBe(3);
  });

  it('the bearer scheme is case-insensitive, and a 401 names it (WWW-Authenticate)', async () => {
    const lower = await fetch(`${api.url}/v1/workspaces`, {
      headers: { authorization: `bearer ${alice.accessToken}` },
    });
    expect(lower.status).toBe(200);
    const none = await fetch(`${api.url}/v1/workspaces`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('values too large for an index are a 422, not a 500', async () => {
    const email = `${'a'.repeat(3000)}@example.com`;
    const invite = await alice.client.post(`/v1/workspaces/${alice.workspaceId}/members`, {
      email,
      role: 'member',
    });
    expectProblem(invite, 422, 'VALIDATION_FAILED');
  });
});
