import { startPgBouncer, useTestDatabase, type RunningPgBouncer } from '@listing/testing';
import { API_MAIN, apiEnv } from '../support/api-process';
import { DISPATCHER, freePort, killAll, roleEnv, spawnNode, WORKER } from '../outbox/processes';

const t = useTestDatabase();
jest.setTimeout(60_000);

/**
 * Named prepared statements behind a pooler in transaction mode fail as soon as a transaction
 * lands on a server connection that never parsed them: every authenticated request would fail.
 * A role that prepares statements must refuse to start there, naming the setting to change.
 */
describe('roles behind PgBouncer in transaction mode (real processes)', () => {
  let bouncer: RunningPgBouncer;
  beforeAll(async () => {
    bouncer = await startPgBouncer({ serverUrl: t.info.adminUrl, poolSize: 2 });
  });
  afterAll(async () => {
    await killAll();
    await bouncer?.stop();
  });

  // Through the pooler, with the default setting (named statements on) even when the harness
  // itself runs pooled (it then sets 0).
  const pooledEnv = () => ({
    DATABASE_URL: bouncer.via(t.info.appUrl),
    DATABASE_PREPARED_STATEMENTS: undefined,
  });

  it('the API refuses to start with named statements on, and names the setting', async () => {
    const api = spawnNode('api', API_MAIN, apiEnv(t.info, { ...pooledEnv(), LOG_LEVEL: 'info' }));
    expect(await api.exited).toEqual({ code: 1, signal: null });
    expect(api.output()).toMatch(
      /pooler that shares server connections .*set DATABASE_PREPARED_STATEMENTS=0/,
    );
    expect(api.output()).not.toMatch(/api listening/);
  });

  it('the worker refuses too (its inbox prepares statements)', async () => {
    const worker = spawnNode('worker', WORKER, roleEnv(t, pooledEnv()));
    expect(await worker.exited).toEqual({ code: 1, signal: null });
    expect(worker.output()).toMatch(/set DATABASE_PREPARED_STATEMENTS=0/);
    expect(worker.output()).not.toMatch(/worker ready/);
  });

  it('the dispatcher prepares nothing: it starts with the default setting', async () => {
    const dispatcher = spawnNode('dispatcher', DISPATCHER, roleEnv(t, pooledEnv()));
    await dispatcher.waitForOutput(/dispatcher ready/);
    expect(await dispatcher.stop()).toEqual({ code: 0, signal: null });
  });

  it('with DATABASE_PREPARED_STATEMENTS=0 the API starts and answers through the pooler', async () => {
    const port = await freePort();
    const api = spawnNode(
      'api',
      API_MAIN,
      apiEnv(t.info, {
        ...pooledEnv(),
        DATABASE_PREPARED_STATEMENTS: '0',
        LOG_LEVEL: 'info',
        PORT: String(port),
      }),
    );
    await api.waitForOutput(/api listening/);
    const ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await api.stop()).toEqual({ code: 0, signal: null });
  });
});
