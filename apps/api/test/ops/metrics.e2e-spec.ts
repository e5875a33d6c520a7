import { randomUUID } from 'node:crypto';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { DISPATCHER, freePort, killAll, roleEnv, spawnNode, waitUntil } from '../outbox/processes';
import { createDraft, metric, register, scrape, spawnApi, type RunningApi } from './ops-stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

/**
 * A known workload against the real processes (API and dispatcher over real PostgreSQL and
 * Redis), then /metrics must count exactly what happened.
 */
describe('metrics after a known workload', () => {
  let api: RunningApi;
  afterAll(async () => {
    await killAll();
  });

  it('counts idempotency misses, replays and reused keys, HTTP requests and dispatched events', async () => {
    api = await spawnApi(t);
    const user = await register(api.url);

    // 3 first executions (miss), each replayed twice (6 hits), one key reused with another body.
    const keys = [randomUUID(), randomUUID(), randomUUID()];
    for (const key of keys) expect((await createDraft(api.url, user, `draft ${key}`, key)).status).toBe(201);
    for (let round = 0; round < 2; round++) {
      for (const key of keys) {
        const replay = await createDraft(api.url, user, `draft ${key}`, key);
        expect(replay).toMatchObject({ status: 201, replayed: true });
      }
    }
    expect((await createDraft(api.url, user, 'another body', keys[0])).status).toBe(409);
    // Without a key the mechanism is not used: no idempotency outcome.
    expect((await createDraft(api.url, user, 'no key')).status).toBe(201);

    const apiMetrics = await scrape(`${api.url}/metrics`);
    expect(metric(apiMetrics, 'listing_idempotency_requests_total', { outcome: 'miss' })).toBe(3);
    expect(metric(apiMetrics, 'listing_idempotency_requests_total', { outcome: 'hit' })).toBe(6);
    expect(metric(apiMetrics, 'listing_idempotency_requests_total', { outcome: 'key_reused' })).toBe(1);
    expect(metric(apiMetrics, 'listing_idempotency_requests_total', { outcome: 'scope_conflict' })).toBe(0);
    expect(metric(apiMetrics, 'listing_idempotency_requests_total', { outcome: 'in_progress' })).toBe(0);
    expect(metric(apiMetrics, 'listing_idempotency_wait_seconds_count', { outcome: 'miss' })).toBe(3);
    const draftsRoute = { method: 'POST', route: '/v1/workspaces/:workspaceId/product-drafts' };
    expect(metric(apiMetrics, 'listing_http_requests_total', { ...draftsRoute, status: '201' })).toBe(10);
    expect(metric(apiMetrics, 'listing_http_requests_total', { ...draftsRoute, status: '409' })).toBe(1);
    expect(
      metric(apiMetrics, 'listing_http_request_duration_seconds_count', { ...draftsRoute, status: '201' }),
    ).toBe(10);
    expect(
      metric(apiMetrics, 'listing_http_requests_total', { route: '/v1/auth/register', status: '201' }),
    ).toBe(1);

    // Outbox: M events in a queue of our own, a backlog gauge, then a dispatcher moves them.
    const ws = await seedWorkspace(t.owner, 'metrics');
    const M = 7;
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload)
       select gen_random_uuid(), $1, 'ops-metrics', 'ops.metrics-probe', jsonb_build_object('n', g)
         from generate_series(1, $2::int) g`,
      [ws.workspaceId, M],
    );
    const backlog = await scrape(`${api.url}/metrics`);
    expect(metric(backlog, 'listing_outbox_pending_events', { queue: 'ops-metrics' })).toBe(M);
    expect(
      metric(backlog, 'listing_outbox_oldest_pending_age_seconds', { queue: 'ops-metrics' }),
    ).toBeGreaterThanOrEqual(0);
    expect(metric(backlog, 'listing_outbox_stats_up')).toBe(1);

    const opsPort = await freePort();
    const dispatcher = spawnNode(
      'dispatcher',
      DISPATCHER,
      roleEnv(t, { OPS_PORT: String(opsPort), LOG_LEVEL: 'info' }),
    );
    await dispatcher.waitForOutput(/dispatcher ready/);
    const dispatched = async () => {
      const { rows } = await t.owner.query(
        `select count(*)::int as n from outbox_events where status = 'dispatched'`,
      );
      return rows[0].n as number;
    };
    const expected = await waitUntil('every event dispatched', async () => {
      const { rows } = await t.owner.query(
        `select count(*)::int as n from outbox_events where status <> 'dispatched'`,
      );
      return rows[0].n === 0 ? dispatched() : null;
    });
    expect(expected).toBeGreaterThanOrEqual(M);
    const dispatcherMetrics = await scrape(`http://127.0.0.1:${opsPort}/metrics`);
    // The ops listener's refusals are problem+json like the API's.
    for (const [method, path, status, code] of [
      ['POST', '/metrics', 405, 'METHOD_NOT_ALLOWED'],
      ['GET', '/nope', 404, 'ROUTE_NOT_FOUND'],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${opsPort}${path}`, { method });
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({ status, code });
    }
    expect(metric(dispatcherMetrics, 'listing_outbox_dispatched_events_total')).toBe(expected);
    expect(
      metric(dispatcherMetrics, 'listing_outbox_dispatch_latency_seconds_count', { queue: 'ops-metrics' }),
    ).toBe(M);
    expect(metric(dispatcherMetrics, 'listing_outbox_dispatch_failures_total')).toBe(0);
    expect(metric(dispatcherMetrics, 'listing_outbox_pending_events', { queue: 'ops-metrics' })).toBe(0);
    const after = await scrape(`${api.url}/metrics`);
    expect(metric(after, 'listing_outbox_pending_events', { queue: 'ops-metrics' })).toBe(0);
  });

  it('writes JSON log lines that correlate request and workspace, and never a credential', async () => {
    const user = await register(api.url);
    const requestId = `ops-${randomUUID()}`;
    const res = await fetch(`${api.url}/v1/workspaces/${user.workspaceId}/product-drafts`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${user.token}`,
        cookie: 'session=cookie-secret-value',
        'x-request-id': requestId,
      },
      body: JSON.stringify({ title: 'logged' }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-request-id')).toBe(requestId);
    // Also on an answer an early hook gives: an upload whose caller is refused before its bytes.
    const refusedId = `ops-${randomUUID()}`;
    const refused = await fetch(
      `${api.url}/v1/workspaces/${user.workspaceId}/media/${randomUUID()}/content`,
      {
        method: 'PUT',
        headers: {
          'content-type': 'application/octet-stream',
          authorization: 'Bearer not-a-token',
          'x-request-id': refusedId,
        },
        body: Buffer.from('bytes'),
      },
    );
    expect(refused.status).toBe(401);
    expect(refused.headers.get('x-request-id')).toBe(refusedId);
    // A failed login carries a password in the body; it must not reach the logs either.
    await fetch(`${api.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'nobody@example.test', password: 'wrong-password-value' }),
    });
    await fetch(`${api.url}/v1/auth/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refreshToken: user.refreshToken }),
    });

    const output = await waitUntil('the request log line', async () => {
      const out = api.process.output();
      return out.includes(requestId) ? out : null;
    });
    const lines = output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const line = lines.find((l) => l.requestId === requestId);
    expect(line).toMatchObject({
      level: 'info',
      role: 'api',
      msg: 'request completed',
      route: '/v1/workspaces/:workspaceId/product-drafts',
      status: 201,
      workspaceId: user.workspaceId,
    });
    for (const secret of [
      user.token,
      user.refreshToken,
      user.password,
      'cookie-secret-value',
      'wrong-password-value',
    ]) {
      expect(output).not.toContain(secret);
    }
    expect(output).not.toMatch(/bearer [A-Za-z0-9_-]{20,}/i);
  });
});
