import { randomUUID } from 'node:crypto';
import { Database } from '@listing/db';
import { useTestDatabase } from '@listing/testing';
import { ApiClient, registerUser } from '../support/api-client';
import { startApi, type InProcessApi } from '../support/in-process-api';

const t = useTestDatabase();

/** Register, login, refresh-token rotation and reuse detection, rate limits. */
describe('authentication', () => {
  let api: InProcessApi;
  beforeAll(async () => {
    api = await startApi(t.info, { RATE_LIMIT_AUTH_PER_MINUTE: '1000' });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('stores only a memory-hard password hash and SHA-256 token hashes', async () => {
    const user = await registerUser(api.url);
    const { rows } = await t.owner.query('select password_hash from users where id = $1', [user.userId]);
    expect(rows[0].password_hash).toMatch(/^scrypt\$\d+\$8\$1\$/);
    expect(rows[0].password_hash).not.toContain(user.password);
    const dump = JSON.stringify(
      (
        await t.owner.query(
          'select token_hash, session_id, user_id, expires_at, created_at from auth_access_tokens union all select token_hash, session_id, null, null, created_at from auth_refresh_tokens',
        )
      ).rows,
    );
    expect(dump).not.toContain(user.accessToken);
    expect(dump).not.toContain(user.refreshToken);
  });

  it('login with the right password works, the wrong one is a 401 problem', async () => {
    const user = await registerUser(api.url);
    const anon = new ApiClient(api.url);
    const ok = await anon.post<{ accessToken: string }>('/v1/auth/login', {
      email: user.email,
      password: user.password,
    });
    expect(ok.status).toBe(200);
    const me = new ApiClient(api.url, ok.body.accessToken);
    expect((await me.get('/v1/workspaces')).status).toBe(200);
    const bad = await anon.post('/v1/auth/login', { email: user.email, password: 'wrong password!' });
    expect(bad.status).toBe(401);
    expect(bad.body).toMatchObject({ code: 'INVALID_CREDENTIALS' });
    const unknown = await anon.post('/v1/auth/login', {
      email: `${randomUUID()}@example.test`,
      password: 'whatever123',
    });
    expect(unknown.body).toMatchObject({ code: 'INVALID_CREDENTIALS' });
    expect(JSON.stringify(bad.body)).not.toContain('wrong password!');
  });

  it('refresh rotates the token; reusing a rotated token revokes the whole session', async () => {
    const user = await registerUser(api.url);
    const anon = new ApiClient(api.url);
    const rotated = await anon.post<{ accessToken: string; refreshToken: string }>('/v1/auth/refresh', {
      refreshToken: user.refreshToken,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.refreshToken).not.toBe(user.refreshToken);
    const fresh = new ApiClient(api.url, rotated.body.accessToken);
    expect((await fresh.get('/v1/workspaces')).status).toBe(200);

    // a stolen copy of the old token is presented: refused, and the session dies
    const replayed = await anon.post('/v1/auth/refresh', { refreshToken: user.refreshToken });
    expect(replayed.status).toBe(401);
    expect(replayed.body).toMatchObject({ code: 'INVALID_REFRESH_TOKEN' });
    expect((await fresh.get('/v1/workspaces')).status).toBe(401);
    expect((await anon.post('/v1/auth/refresh', { refreshToken: rotated.body.refreshToken })).status).toBe(
      401,
    );
  });

  it('a refresh replayed within the grace window (its answer was lost) answers the same pair; the session lives on', async () => {
    const user = await registerUser(api.url);
    const anon = new ApiClient(api.url);
    const first = await anon.post<{ accessToken: string; refreshToken: string }>('/v1/auth/refresh', {
      refreshToken: user.refreshToken,
    });
    expect(first.status).toBe(200);
    const replay = await anon.post('/v1/auth/refresh', { refreshToken: user.refreshToken });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(first.body);
    const fresh = new ApiClient(api.url, first.body.accessToken);
    expect((await fresh.get('/v1/workspaces')).status).toBe(200);
    // The pair is in use now: the same old token again is a leaked copy.
    expect((await anon.post('/v1/auth/refresh', { refreshToken: user.refreshToken })).status).toBe(401);
    expect((await fresh.get('/v1/workspaces')).status).toBe(401);
  });

  it('concurrent refreshes of one token all answer the same pair, which then works', async () => {
    const user = await registerUser(api.url);
    const anon = new ApiClient(api.url);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        anon.post<{ accessToken: string; refreshToken: string }>('/v1/auth/refresh', {
          refreshToken: user.refreshToken,
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(new Set(answers.map((a) => a.body.refreshToken)).size).toBe(1);
    const { rows } = await t.owner.query(
      `select count(*)::int as n from auth_refresh_tokens r join auth_sessions s on s.id = r.session_id
        where s.user_id = $1`,
      [user.userId],
    );
    expect(rows[0].n).toBe(2); // the first token and one successor, not six
    const next = await anon.post('/v1/auth/refresh', { refreshToken: answers[0]!.body.refreshToken });
    expect(next.status).toBe(200);
  });

  it('past the grace window a replay revokes the session, as any reuse', async () => {
    const short = await startApi(t.info, {
      RATE_LIMIT_AUTH_PER_MINUTE: '1000',
      AUTH_REFRESH_GRACE_SECONDS: '1',
    });
    try {
      const user = await registerUser(short.url);
      const anon = new ApiClient(short.url);
      const first = await anon.post<{ accessToken: string }>('/v1/auth/refresh', {
        refreshToken: user.refreshToken,
      });
      expect(first.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 1600));
      const late = await anon.post('/v1/auth/refresh', { refreshToken: user.refreshToken });
      expect(late.status).toBe(401);
      expect((await new ApiClient(short.url, first.body.accessToken).get('/v1/workspaces')).status).toBe(401);
    } finally {
      await short.close();
    }
  });

  it('logout ends the session: its access token and its refresh token stop working, other sessions do not', async () => {
    const user = await registerUser(api.url);
    const anon = new ApiClient(api.url);
    const other = await anon.post<{ accessToken: string }>('/v1/auth/login', {
      email: user.email,
      password: user.password,
    });
    expect((await anon.post('/v1/auth/logout')).status).toBe(401);
    const out = await user.client.post('/v1/auth/logout');
    expect(out.status).toBe(204);
    expect((await user.client.get('/v1/workspaces')).status).toBe(401);
    expect((await anon.post('/v1/auth/refresh', { refreshToken: user.refreshToken })).status).toBe(401);
    expect((await user.client.post('/v1/auth/logout')).status).toBe(401);
    expect((await new ApiClient(api.url, other.body.accessToken).get('/v1/workspaces')).status).toBe(200);
  });

  it('an access token dies with its session, even before the token itself expires', async () => {
    const user = await registerUser(api.url);
    expect((await user.client.get('/v1/workspaces')).status).toBe(200);
    await t.owner.query(
      `update auth_sessions set expires_at = now() - interval '1 second'
        where user_id = $1`,
      [user.userId],
    );
    expect((await user.client.get('/v1/workspaces')).status).toBe(401);
  });

  it('the token lookup is parsed once per connection, not on every request', async () => {
    // One connection, so what it has prepared is what every request used.
    const single = await startApi(t.info, { DATABASE_POOL_SIZE: '1' });
    try {
      const user = await registerUser(single.url);
      for (let i = 0; i < 3; i++) expect((await user.client.get('/v1/workspaces')).status).toBe(200);
      const { rows } = await single.app
        .get(Database)
        .pool.query<{ statement: string }>('select statement from pg_prepared_statements');
      const lookups = rows.filter((r) => r.statement.includes('app_authenticate'));
      // Behind a transaction pooler (DATABASE_PREPARED_STATEMENTS=0) nothing may stay prepared.
      expect(lookups).toHaveLength(t.info.pooled ? 0 : 1);
    } finally {
      await single.close();
    }
  });

  it('auth endpoints never use the idempotency mechanism', async () => {
    const key = randomUUID();
    const email = `${randomUUID()}@example.test`;
    const anon = new ApiClient(api.url);
    const res = await anon.post('/v1/auth/register', { email, password: 'a long password' }, { key });
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(
      (
        await t.owner.query(
          'select count(*)::int as n from idempotency_requests where idempotency_key = $1',
          [key],
        )
      ).rows[0].n,
    ).toBe(0);
    const again = await anon.post('/v1/auth/register', { email, password: 'a long password' }, { key });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'EMAIL_TAKEN' });
  });

  const failedLogins = async (url: string, n: number) => {
    const anon = new ApiClient(url);
    const statuses = [];
    for (let i = 0; i < n; i++) {
      const r = await anon.post('/v1/auth/login', { email: 'x@example.test', password: 'nope-nope' });
      statuses.push(r.status);
      if (r.status === 429) {
        expect(r.headers.get('content-type')).toContain('application/problem+json');
        expect(r.body).toMatchObject({ code: 'RATE_LIMITED' });
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
    }
    return statuses;
  };

  it('login is rate limited per client (429 problem with Retry-After)', async () => {
    // Its own key namespace: the budget is shared through Redis with every API of the deployment.
    const limited = await startApi(t.info, {
      RATE_LIMIT_AUTH_PER_MINUTE: '3',
      BULLMQ_PREFIX: `${t.info.bullPrefix}-one`,
    });
    try {
      expect(await failedLogins(limited.url, 4)).toEqual([401, 401, 401, 429]);
    } finally {
      await limited.close();
    }
  });

  const loginFrom = (url: string) => (from: string, email: string) =>
    new ApiClient(url)
      .request('POST', '/v1/auth/login', {
        body: { email, password: 'nope-nope' },
        headers: { 'x-forwarded-for': from },
      })
      .then((r) => r.status);

  it('behind a trusted proxy: one account has one budget whatever the address, and an IPv6 /64 is one client', async () => {
    const limited = await startApi(t.info, {
      RATE_LIMIT_AUTH_PER_MINUTE: '2',
      RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_MINUTE: '3',
      TRUST_PROXY: 'loopback',
      BULLMQ_PREFIX: `${t.info.bullPrefix}-proxy`,
    });
    try {
      const login = loginFrom(limited.url);
      // a fresh address for every guess at one password: the account's budget still runs out
      const guesses = [];
      for (const from of ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4'])
        guesses.push(await login(from, 'Victim@Example.test'));
      expect(guesses).toEqual([401, 401, 401, 429]);
      expect(await login('198.51.100.5', 'other@example.test')).toBe(401);
      // concurrent guesses from many addresses: still only the account's budget gets checked
      const burst = await Promise.all(
        Array.from({ length: 8 }, (_, i) => login(`203.0.113.${i + 1}`, 'burst@example.test')),
      );
      expect(burst.filter((st) => st === 401)).toHaveLength(3);
      expect(burst.filter((st) => st === 429)).toHaveLength(5);
      // every address of one /64 is one client (2 a minute); the next /64 is another
      const sameBlock = [];
      for (const [i, from] of ['2001:db8:7:7::1', '2001:db8:7:7::2', '2001:db8:7:7:ffff::3'].entries())
        sameBlock.push(await login(from, `v6-${i}@example.test`));
      expect(sameBlock).toEqual([401, 401, 429]);
      expect(await login('2001:db8:7:8::1', 'v6-next@example.test')).toBe(401);
    } finally {
      await limited.close();
    }
  });

  it('only failed logins count against an account: its owner logging in never locks it', async () => {
    const limited = await startApi(t.info, {
      RATE_LIMIT_AUTH_PER_MINUTE: '100',
      RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_MINUTE: '2',
      BULLMQ_PREFIX: `${t.info.bullPrefix}-account`,
    });
    try {
      const user = await registerUser(limited.url);
      const anon = new ApiClient(limited.url);
      const attempt = (password: string) =>
        anon.post('/v1/auth/login', { email: user.email, password }).then((r) => r.status);
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push(await attempt(user.password));
      statuses.push(await attempt('wrong password 1'), await attempt('wrong password 2'));
      // its failures used up: refused for the window, even with the right password
      statuses.push(await attempt(user.password));
      expect(statuses).toEqual([200, 200, 200, 200, 401, 401, 429]);
    } finally {
      await limited.close();
    }
  });

  it('without TRUST_PROXY, X-Forwarded-For is ignored: the connection is the client', async () => {
    const limited = await startApi(t.info, {
      RATE_LIMIT_AUTH_PER_MINUTE: '2',
      BULLMQ_PREFIX: `${t.info.bullPrefix}-no-proxy`,
    });
    try {
      const login = loginFrom(limited.url);
      const statuses = [];
      for (const [i, from] of ['198.51.100.1', '198.51.100.2', '198.51.100.3'].entries())
        statuses.push(await login(from, `direct-${i}@example.test`));
      expect(statuses).toEqual([401, 401, 429]);
    } finally {
      await limited.close();
    }
  });

  it('a percent-encoded spelling of the login path shares the login budget', async () => {
    const limited = await startApi(t.info, {
      RATE_LIMIT_AUTH_PER_MINUTE: '3',
      BULLMQ_PREFIX: `${t.info.bullPrefix}-encoded`,
    });
    try {
      const anon = new ApiClient(limited.url);
      const statuses = [];
      for (const path of ['/v1/auth/login', '/v1/auth/logi%6E', '/v1/auth/%6Cogin', '/v1/auth/l%6Fgin'])
        statuses.push((await anon.post(path, { email: 'x@example.test', password: 'nope-nope' })).status);
      expect(statuses).toEqual([401, 401, 401, 429]);
    } finally {
      await limited.close();
    }
  });

  it('the login budget is shared by every API process, not multiplied by them', async () => {
    const env = { RATE_LIMIT_AUTH_PER_MINUTE: '3', BULLMQ_PREFIX: `${t.info.bullPrefix}-shared` };
    const a = await startApi(t.info, env);
    const b = await startApi(t.info, env);
    try {
      expect(await failedLogins(a.url, 2)).toEqual([401, 401]);
      expect(await failedLogins(b.url, 2)).toEqual([401, 429]);
      expect(await failedLogins(a.url, 1)).toEqual([429]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('with Redis unreachable, login still answers and is limited per process', async () => {
    // Nothing listens on port 1: every Redis command would fail, so the memory fallback decides.
    const isolated = await startApi(t.info, {
      RATE_LIMIT_AUTH_PER_MINUTE: '3',
      REDIS_URL: 'redis://127.0.0.1:1',
    });
    try {
      expect(await failedLogins(isolated.url, 4)).toEqual([401, 401, 401, 429]);
    } finally {
      await isolated.close();
    }
  });
});
