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
    const socket = connect(Number(port), hostname, () => socket.end(request));
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
    socket.on('end', () => resolve(out));
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

  it('values too large for an index are a 422, not a 500', async () => {
    const email = `${'a'.repeat(3000)}@example.com`;
    const invite = await alice.client.post(`/v1/workspaces/${alice.workspaceId}/members`, {
      email,
      role: 'member',
    });
    expectProblem(invite, 422, 'VALIDATION_FAILED');
  });
});
