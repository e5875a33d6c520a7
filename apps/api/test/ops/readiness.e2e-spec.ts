import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { CuttableProxy, useTestDatabase } from '@listing/testing';
import { DISPATCHER, WORKER, freePort, killAll, roleEnv, spawnNode, waitUntil } from '../outbox/processes';
import { createDraft, register, spawnApi, statusOf } from './ops-stack';

const t = useTestDatabase();
jest.setTimeout(120_000);

/**
 * PostgreSQL is reached through a TCP proxy this test can cut (the shared server on 5432 is
 * never stopped: other suites use it); Redis is a private redis-server on a random port that is
 * killed and restarted. Every role (api, dispatcher, worker) must report not-ready while either
 * is gone, fast, and ready again once it is back.
 */
describe('readiness follows PostgreSQL and Redis, for every process role', () => {
  let redisPort: number;
  let redis: ChildProcess | null = null;
  let proxy: CuttableProxy;

  const startRedis = async () => {
    redis = spawn(
      'redis-server',
      ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    await waitUntil('private redis', async () => {
      const c = spawn('redis-cli', ['-p', String(redisPort), 'ping'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let out = '';
      c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise((r) => c.once('exit', r));
      return out.includes('PONG');
    });
  };
  const stopRedis = async () => {
    const r = redis;
    redis = null;
    if (!r) return;
    const exited = new Promise((resolve) => r.once('exit', resolve));
    r.kill('SIGKILL');
    await exited;
  };

  beforeAll(async () => {
    redisPort = await freePort();
    await startRedis();
    const pg = new URL(t.info.appUrl);
    proxy = new CuttableProxy(await freePort(), { host: pg.hostname, port: Number(pg.port || 5432) });
    await proxy.open();
  });
  afterAll(async () => {
    await killAll();
    await stopRedis();
    await proxy?.cut();
  });

  it('api, dispatcher and worker: 503 while PostgreSQL or Redis is down, 200 once it is back', async () => {
    const pgUrl = new URL(t.info.appUrl);
    pgUrl.port = String(proxy.port);
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    const env = { DATABASE_URL: pgUrl.toString(), REDIS_URL: redisUrl };

    const api = await spawnApi(t, env);
    const [dPort, wPort] = [await freePort(), await freePort()];
    const dispatcher = spawnNode('dispatcher', DISPATCHER, roleEnv(t, { ...env, OPS_PORT: String(dPort) }));
    const worker = spawnNode('worker', WORKER, roleEnv(t, { ...env, OPS_PORT: String(wPort) }));
    await dispatcher.waitForOutput(/dispatcher ready/);
    await worker.waitForOutput(/worker ready/);
    const ready = {
      api: `${api.url}/health/ready`,
      dispatcher: `http://127.0.0.1:${dPort}/health/ready`,
      worker: `http://127.0.0.1:${wPort}/health/ready`,
    };
    const live = [
      `${api.url}/health/live`,
      `http://127.0.0.1:${dPort}/health/live`,
      `http://127.0.0.1:${wPort}/health/live`,
    ];
    const all = async () => Promise.all(Object.values(ready).map(statusOf));
    let last: number[] = [];
    const every = (status: number) => async () => (last = await all()).every((s) => s === status);

    await waitUntil('all ready', every(200), 15_000);

    // Redis gone.
    await stopRedis();
    await waitUntil('all not ready without Redis', every(503), 10_000).catch((e: Error) => {
      throw new Error(`${e.message}: api, dispatcher, worker answered ${last.join(', ')}`);
    });
    const body = await (await fetch(ready.api)).json();
    expect(body).toMatchObject({ checks: { postgres: true, redis: false } });
    // Liveness is about the process, not its dependencies.
    expect(await Promise.all(live.map(statusOf))).toEqual([200, 200, 200]);
    await startRedis();
    await waitUntil('all ready after Redis returned', every(200), 20_000);

    // PostgreSQL gone.
    await proxy.cut();
    await waitUntil('all not ready without PostgreSQL', every(503), 10_000);
    const started = Date.now();
    const pgDown = await fetch(ready.dispatcher);
    expect(pgDown.status).toBe(503);
    expect(await pgDown.json()).toMatchObject({ checks: { postgres: false, redis: true } });
    // Fails fast: the probe is bounded (1 s per dependency, in parallel); 5 s is a loose bound.
    expect(Date.now() - started).toBeLessThan(5000);
    await proxy.open();
    await waitUntil('all ready after PostgreSQL returned', every(200), 20_000);
  });

  it('a write while PostgreSQL is unreachable: 503 SERVICE_UNAVAILABLE with Retry-After; the same key afterwards runs once', async () => {
    const pgUrl = new URL(t.info.appUrl);
    pgUrl.port = String(proxy.port);
    const api = await spawnApi(t, {
      DATABASE_URL: pgUrl.toString(),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    });
    const user = await register(api.url);
    const key = randomUUID();

    await proxy.cut();
    for (const k of [key, undefined]) {
      const res = await fetch(`${api.url}/v1/workspaces/${user.workspaceId}/product-drafts`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${user.token}`,
          ...(k ? { 'idempotency-key': k } : {}),
        },
        body: JSON.stringify({ title: 'during the outage' }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.get('retry-after')).toBe('1');
      const problem = (await res.json()) as Record<string, unknown>;
      expect(problem).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', retryable: true });
      expect(JSON.stringify(problem)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres/i);
    }
    await proxy.open();

    const first = await createDraft(api.url, user, 'during the outage', key);
    expect(first.status).toBe(201);
    const replay = await createDraft(api.url, user, 'during the outage', key);
    expect(replay).toMatchObject({ status: 201, replayed: true, body: { id: first.body.id } });
    const { rows } = await t.owner.query(
      `select count(*)::int as n from records where workspace_id = $1 and module_code = 'product_draft'`,
      [user.workspaceId],
    );
    expect(rows[0].n).toBe(1);
  });
});
