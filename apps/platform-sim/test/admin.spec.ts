import { ConfigError, loadSimConfig, SimAdminClient, startPlatformSim } from '../src/index';
import { useSim } from './sim-http.helpers';

describe('platform-sim admin', () => {
  const TOKEN = 'admin-token-for-tests';
  const t = useSim({ adminToken: TOKEN });

  it('requires the admin token on /admin when one is configured, not on /health or the provider API', async () => {
    expect((await t.call('GET', '/admin/counters')).status).toBe(401);
    expect(
      (await t.call('GET', '/admin/counters', { headers: { authorization: 'Bearer wrong-token-value' } }))
        .status,
    ).toBe(401);
    await expect(new SimAdminClient(t.sim.url).counters()).rejects.toMatchObject({ status: 401 });
    expect(await t.admin.counters()).toMatchObject({ productsCreated: 0 });
    expect((await t.call('GET', '/health')).body).toEqual({ status: 'ok' });
    expect(await t.admin.health()).toBe(true);
  });

  it('reset clears products, ledger, counters and faults', async () => {
    await t.admin.seedProducts('s', 3);
    await t.call('POST', '/ai/v1/text', { body: {}, headers: { 'idempotency-key': 'x' } });
    await t.admin.setFaults({ latencyMs: 1 });
    await t.admin.reset();
    const counters = await t.admin.counters();
    expect(counters).toMatchObject({ productsSeeded: 0, aiCalls: 0, billingEntries: 0, billingByKey: {} });
    expect(await t.admin.getFaults()).toEqual([]);
    expect(await t.admin.countersFor('x')).toEqual({
      key: 'x',
      productCreateCalls: 0,
      productId: null,
      aiCalls: 0,
      aiResultId: null,
      billingEntries: 0,
    });
  });

  it('answers unknown routes with a JSON 404', async () => {
    const res = await t.call('GET', '/nope');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: 'NOT_FOUND' });
  });
});

describe('platform-sim lifecycle and configuration', () => {
  it('closes promptly even while a request is held by a timeout fault', async () => {
    const sim = await startPlatformSim();
    const admin = new SimAdminClient(sim.url);
    await admin.setFaults({ timeoutRate: 1 });
    const held = fetch(`${sim.url}/ai/v1/text`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k' },
      body: '{}',
    }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await sim.close();
    expect(Date.now() - started).toBeLessThan(2_000);
    // fetch's TypeError comes from another realm than jest's, so match on the message.
    expect(await held).toMatchObject({ message: 'fetch failed' });
  });

  it('loads defaults and reports every bad variable at once', () => {
    expect(loadSimConfig({})).toMatchObject({ HOST: '127.0.0.1', PORT: 4010, LOG_LEVEL: 'info' });
    expect(loadSimConfig({ SIM_ADMIN_TOKEN: '' }).SIM_ADMIN_TOKEN).toBeUndefined();
    let error: unknown;
    try {
      loadSimConfig({ PORT: 'eighty', SIM_ADMIN_TOKEN: 'short', LOG_LEVEL: 'loud', SIM_PUBLIC_URL: 'nope' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const name of ['PORT', 'SIM_ADMIN_TOKEN', 'LOG_LEVEL', 'SIM_PUBLIC_URL'])
      expect(problems).toMatch(name);
    // The token's value is never part of the report.
    expect(problems).not.toMatch('short');
  });
});
