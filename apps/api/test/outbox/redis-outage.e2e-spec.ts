import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import {
  DISPATCHER,
  WORKER,
  createTestTables,
  freePort,
  killAll,
  roleEnv,
  spawnNode,
  waitUntil,
} from './processes';

const t = useTestDatabase();
jest.setTimeout(90000);

/**
 * A private redis-server (never the shared one), killed for 10 s in the middle of a run. It
 * writes an fsync'ed append-only file so that jobs BullMQ acknowledged before the kill survive
 * the restart: what the first tests check is the dispatcher (no event lost, no attempt counted),
 * not Redis durability. The last one runs it without persistence: jobs of events already marked
 * dispatched die with it, and the dispatcher must deliver them again.
 */
describe('Redis unreachable for 10 s in the middle of a run', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'outbox-redis-'));
  let port: number;
  let server: ChildProcess | null = null;

  /** persist: an fsync'ed append-only file in `dir`; otherwise nothing survives a kill. */
  const startRedis = async (persist = true) => {
    const durability = persist
      ? ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir]
      : ['--appendonly', 'no', '--dir', mkdtempSync(path.join(tmpdir(), 'outbox-redis-volatile-'))];
    server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...durability, '--daemonize', 'no'],
      { stdio: 'ignore' },
    );
    await waitUntil('private redis to answer', async () => {
      const probe = new Redis({
        port,
        host: '127.0.0.1',
        lazyConnect: true,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
      });
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    });
  };
  const killRedis = async () => {
    const s = server!;
    server = null;
    const exited = new Promise((r) => s.once('exit', r));
    s.kill('SIGKILL');
    await exited;
  };

  beforeAll(async () => {
    port = await freePort();
    await startRedis();
  });
  afterAll(async () => {
    await killAll();
    if (server) await killRedis();
  });

  it('pauses without burning attempts and delivers everything once Redis is back', async () => {
    const workspaces = [];
    for (let i = 0; i < 4; i++) workspaces.push((await seedWorkspace(t.owner, `r${i}`)).workspaceId);
    const redisUrl = `redis://127.0.0.1:${port}`;
    const dispatcher = spawnNode(
      'dispatcher',
      DISPATCHER,
      roleEnv(t, {
        REDIS_URL: redisUrl,
        OUTBOX_REDIS_RETRY_MS: '200',
        OUTBOX_POLL_INTERVAL_MS: '50',
        OUTBOX_BATCH_SIZE: '50',
      }),
    );
    await dispatcher.waitForOutput(/dispatcher ready/);

    // A steady writer for the whole run: 20 events per workspace every 100 ms.
    let writing = true;
    let inserted = 0;
    const writer = (async () => {
      while (writing) {
        for (const ws of workspaces) {
          await t.owner.query(
            `insert into outbox_events (id, workspace_id, queue, event_type, payload, max_attempts)
             select gen_random_uuid(), $1, 'q-outage', 'outage.event', jsonb_build_object('n', g), 3
               from generate_series(1, 20) g`,
            [ws],
          );
          inserted += 20;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const dispatched = async () =>
      (await t.owner.query(`select count(*)::int as n from outbox_events where status = 'dispatched'`))
        .rows[0].n as number;

    await waitUntil('some events dispatched before the outage', async () => (await dispatched()) > 200);
    await killRedis();
    // Adds BullMQ accepted just before the kill are still marked: give them 2 s, then nothing
    // may move for the remaining 8 s of the outage.
    await new Promise((r) => setTimeout(r, 2000));
    const settled = await dispatched();
    await new Promise((r) => setTimeout(r, 8000));
    const { rows: during } = await t.owner.query(
      `select count(*) filter (where status = 'pending')::int as pending,
              count(*) filter (where status = 'dispatched')::int as dispatched,
              count(*) filter (where status = 'dispatching')::int as dispatching
         from outbox_events`,
    );
    // Nothing moved while Redis was away, the backlog grew, and no lease is held across the outage.
    expect(during[0].dispatched).toBe(settled);
    expect(during[0].pending).toBeGreaterThan(500);
    expect(during[0].dispatching).toBe(0);
    expect(dispatcher.child.exitCode).toBeNull();
    expect(dispatcher.output()).toMatch(/dispatcher paused/);

    await startRedis();
    await new Promise((r) => setTimeout(r, 1000));
    writing = false;
    await writer;
    await waitUntil(
      'everything dispatched after Redis came back',
      async () => (await dispatched()) === inserted,
      30_000,
      100,
    );
    expect(dispatcher.output()).toMatch(/dispatcher resumed/);

    const { rows } = await t.owner.query(
      `select count(*)::int as n, max(attempt_count) as max_attempts,
              count(*) filter (where status <> 'dispatched')::int as not_dispatched
         from outbox_events`,
    );
    expect(rows[0]).toEqual({ n: inserted, max_attempts: 0, not_dispatched: 0 });

    // Every event is a job in BullMQ (those acknowledged before the kill survived in the AOF).
    const redis = new Redis({ port, host: '127.0.0.1' });
    const queue = new Queue('q-outage', { connection: redis, prefix: t.info.bullPrefix });
    try {
      expect(await queue.getJobCountByTypes('waiting')).toBe(inserted);
    } finally {
      await queue.close();
      await redis.quit();
    }
    expect(await dispatcher.stop()).toEqual({ code: 0, signal: null });
  });

  // BullMQ cannot finish a job while Redis is away, so a worker's graceful stop with a job in its
  // handler waited for Redis forever (seen by hand: still running long after SIGTERM). The stop
  // timeout bounds it; the dispatcher, paused and holding no lease, stops cleanly. The job is held
  // in its handler by a lock on the table its effect writes.
  it('SIGTERM while Redis is unreachable and a job runs: the worker exits after OUTBOX_STOP_TIMEOUT_MS, the dispatcher at once', async () => {
    if (!server) await startRedis();
    await createTestTables(t.owner);
    const ws = (await seedWorkspace(t.owner, 'held')).workspaceId;
    const env = roleEnv(t, {
      REDIS_URL: `redis://127.0.0.1:${port}`,
      OUTBOX_STOP_TIMEOUT_MS: '1500',
      OUTBOX_REDIS_RETRY_MS: '200',
    });
    const worker = spawnNode('worker', WORKER, env);
    const dispatcher = spawnNode('dispatcher', DISPATCHER, env);
    await worker.waitForOutput(/worker ready/);
    await dispatcher.waitForOutput(/dispatcher ready/);
    const lock = await t.owner.connect();
    try {
      await lock.query('begin');
      await lock.query('lock table outbox_test_effects in access exclusive mode');
      await t.owner.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload)
         values (gen_random_uuid(), $1, 'outbox-test', 'outbox.test-effect', '{"marker":"held"}')`,
        [ws],
      );
      await waitUntil('the job in its handler, waiting for the lock', async () => {
        const { rows } = await t.owner.query(
          `select 1 from pg_locks where relation = 'outbox_test_effects'::regclass and not granted`,
        );
        return rows.length > 0;
      });
      await killRedis();
      await dispatcher.waitForOutput(/dispatcher paused/);

      const signalled = Date.now();
      const [workerExit, dispatcherExit] = await Promise.all([
        worker.stop('SIGTERM'),
        dispatcher.stop('SIGTERM'),
      ]);
      expect(dispatcherExit).toEqual({ code: 0, signal: null });
      expect(workerExit).toEqual({ code: 1, signal: null });
      expect(Date.now() - signalled).toBeGreaterThanOrEqual(1500);
      expect(Date.now() - signalled).toBeLessThan(10_000);
      // The message names what the stop still waited on: the Worker of the running job.
      expect(worker.output()).toMatch(
        /stop did not finish within 1500 ms \(waiting on the workers of [^)]*\boutbox-test\b/,
      );
    } finally {
      await lock.query('rollback');
      lock.release();
    }
  });
  // With nothing running there is nothing to wait for: a Worker that cannot close because its
  // blocking connection was cut mid-read is left behind after the idle grace (worker-runtime.ts).
  it('SIGTERM while Redis is unreachable and nothing runs: the worker exits cleanly before the stop timeout', async () => {
    if (!server) await startRedis();
    const env = roleEnv(t, {
      REDIS_URL: `redis://127.0.0.1:${port}`,
      OUTBOX_STOP_TIMEOUT_MS: '8000',
      OUTBOX_REDIS_RETRY_MS: '200',
    });
    const worker = spawnNode('worker', WORKER, env);
    await worker.waitForOutput(/worker ready/);
    await killRedis();
    await worker.waitForOutput(/worker connection error/);
    const signalled = Date.now();
    const exit = await worker.stop('SIGTERM');
    if (exit.code !== 0) process.stdout.write(worker.output());
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalled).toBeLessThan(8000);
    expect(worker.output()).not.toMatch(/stop did not finish/);
  });
  it('Redis killed with -9 and restarted empty: the dispatcher delivers the lost jobs again, each effect happens once', async () => {
    if (server) await killRedis();
    await startRedis(false);
    await t.owner.query('delete from outbox_events'); // the earlier tests' events: jobs of another Redis
    await createTestTables(t.owner);
    const ws = (await seedWorkspace(t.owner, 'lost')).workspaceId;
    const env = roleEnv(t, {
      REDIS_URL: `redis://127.0.0.1:${port}`,
      OUTBOX_REDIS_RETRY_MS: '200',
      OUTBOX_RECLAIM_INTERVAL_MS: '200', // how often the dispatcher compares Redis's run id
    });
    const dispatcher = spawnNode('dispatcher', DISPATCHER, env);
    await dispatcher.waitForOutput(/lost-job sweep finished/); // the first run id gets recorded
    const { rows: events } = await t.owner.query<{ id: string }>(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload)
       select gen_random_uuid(), $1, 'outbox-test', 'outbox.test-effect', jsonb_build_object('marker', 'lost-' || g)
         from generate_series(1, 40) g
       returning id`,
      [ws],
    );
    const statuses = async () =>
      (
        await t.owner.query(
          `select count(*) filter (where status = 'dispatched')::int as dispatched, max(attempt_count) as attempts
             from outbox_events where workspace_id = $1`,
          [ws],
        )
      ).rows[0] as { dispatched: number; attempts: number };
    await waitUntil(
      'all 40 dispatched (no worker yet: the jobs wait in Redis)',
      async () => (await statuses()).dispatched === 40,
    );

    await killRedis(); // kill -9, no persistence: the 40 waiting jobs are gone
    await startRedis(false);
    await dispatcher.waitForOutput(/"requeued":40[^\n]*lost-job sweep finished/, 30_000);
    await waitUntil('all 40 dispatched again', async () => (await statuses()).dispatched === 40, 30_000, 100);
    expect((await statuses()).attempts).toBe(0);

    const worker = spawnNode('worker', WORKER, env);
    await worker.waitForOutput(/worker ready/);
    const effects = async () =>
      (
        await t.owner.query(
          `select count(*)::int as n, count(distinct event_id)::int as events from outbox_test_effects
            where event_id = any($1::uuid[])`,
          [events.map((e) => e.id)],
        )
      ).rows[0] as { n: number; events: number };
    await waitUntil('every lost job ran', async () => (await effects()).events === 40, 30_000, 100);
    // The end state, where no job is left to run (a duplicate would be one): BullMQ has completed
    // the 40, nothing else is queued or running, and no event is left for the dispatcher to add.
    const redis = new Redis({ port, host: '127.0.0.1' });
    const queue = new Queue('outbox-test', { connection: redis, prefix: t.info.bullPrefix });
    try {
      await waitUntil('BullMQ to have completed the 40, nothing left', async () => {
        const counts = await queue.getJobCounts(
          'completed',
          'failed',
          'active',
          'waiting',
          'delayed',
          'prioritized',
          'waiting-children',
        );
        return counts.completed === 40 && Object.values(counts).reduce((a, b) => a + b, 0) === 40;
      });
    } finally {
      await queue.close();
      await redis.quit();
    }
    const { rows: left } = await t.owner.query(
      `select count(*)::int as n from outbox_events where workspace_id = $1 and status <> 'dispatched'`,
      [ws],
    );
    expect(left[0].n).toBe(0);
    expect(await effects()).toEqual({ n: 40, events: 40 });
    expect(await dispatcher.stop()).toEqual({ code: 0, signal: null });
    expect(await worker.stop()).toEqual({ code: 0, signal: null });
  });
});
