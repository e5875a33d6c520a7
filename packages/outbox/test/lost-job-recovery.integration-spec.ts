import { Queue } from 'bullmq';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { LostJobRecovery, OutboxDispatcher, QueueProducer, keyspaceNodes, type RedisClient } from '../src';
import { connectedRedis, holderOf, insertEvents, statusCounts, waitFor } from './helpers';

const t = useTestDatabase();

/**
 * Redis losing jobs after the outbox marked their events dispatched: a restart without
 * persistence (every key gone, the sweep marker too), or with the last second of the append-only
 * file missing (some jobs gone, the marker kept but for the old run id). The shared test Redis
 * cannot be restarted, so each case leaves Redis in the state such a restart leaves behind, for
 * real, under a prefix of its own, and a real producer, dispatcher and database take it from there.
 */
describe('LostJobRecovery (real PostgreSQL and Redis)', () => {
  let redis: RedisClient;
  let n = 0;
  let prefix: string;
  let producer: QueueProducer;

  beforeAll(async () => {
    redis = await connectedRedis(t.info.redis);
  });
  afterAll(async () => {
    await redis.quit();
  });
  beforeEach(async () => {
    await t.owner.query('delete from outbox_events');
    prefix = `${t.info.bullPrefix}-lost${++n}`;
    producer = new QueueProducer(redis, prefix);
  });
  afterEach(async () => {
    await producer.close();
  });

  const recovery = (options: Partial<ConstructorParameters<typeof LostJobRecovery>[0]> = {}) =>
    new LostJobRecovery({
      db: t.agentDb,
      producer,
      owner: 'test-sweeper',
      windowSec: 3600,
      leaseMs: 1, // with no margin: the second sweep is due at once
      settleMarginMs: 0,
      ...options,
    });

  /** Dispatches `count` new events per workspace and queue; returns their ids. */
  async function dispatched(workspaces: string[], queues: string[], count: number): Promise<string[]> {
    const ids: string[] = [];
    for (const ws of workspaces)
      for (const queue of queues) ids.push(...(await insertEvents(t.owner, ws, count, { queue })));
    await new OutboxDispatcher({ db: t.agentDb, producer, batchSize: 100 }).drain();
    expect(await statusCounts(t.owner)).toEqual({ dispatched: ids.length });
    return ids;
  }

  /**
   * Every key of the deployment's prefix deleted at once (one DEL: a running dispatcher must not
   * see a half-emptied Redis), as a Redis restarted without persistence holds it.
   */
  async function loseEverything(): Promise<void> {
    const keys: string[] = [];
    for (const node of keyspaceNodes(redis))
      for await (const batch of node.scanStream({ match: `${prefix}:*`, count: 1000 }))
        keys.push(...(batch as string[]));
    if (keys.length) await redis.del(...keys);
  }

  async function jobsIn(queue: string): Promise<number> {
    const q = new Queue(queue, { connection: redis, prefix });
    const counts = await q.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized');
    await q.close();
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  const runKey = () => `${prefix}:outbox:swept-redis-run`;
  /** The run id of the server holding the prefix's keys (on a cluster, one of several). */
  const currentRunId = async () =>
    /^run_id:(\w+)/m.exec(await (await holderOf(redis, runKey())).info('server'))![1]!;

  it('after Redis lost everything, every event dispatched within the window goes back to pending (no attempt counted) and is delivered again', async () => {
    const a = await seedWorkspace(t.owner);
    const b = await seedWorkspace(t.owner);
    const ids = await dispatched([a.workspaceId, b.workspaceId], ['q-lost-1', 'q-lost-2'], 15);
    // One event dispatched long ago: its job may have completed and been removed since, so a
    // missing job proves nothing; it is left alone.
    await t.owner.query(`update outbox_events set dispatched_at = now() - interval '2 hours' where id = $1`, [
      ids[0],
    ]);
    await loseEverything();

    const report = await recovery().check();
    expect(report).toMatchObject({ checked: ids.length - 1, requeued: ids.length - 1, complete: true });
    expect([...report!.workspaceIds].sort()).toEqual([a.workspaceId, b.workspaceId].sort());
    expect(await statusCounts(t.owner)).toEqual({ pending: ids.length - 1, dispatched: 1 });
    const { rows } = await t.owner.query(
      `select count(*)::int as n from outbox_events
        where status = 'pending' and attempt_count = 0 and dispatched_at is null and next_attempt_at <= now()
          and last_error like 'job lost by Redis%'`,
    );
    expect(rows[0].n).toBe(ids.length - 1);

    // The dispatcher delivers them again: the jobs exist once more.
    await new OutboxDispatcher({ db: t.agentDb, producer, batchSize: 100 }).drain();
    expect(await statusCounts(t.owner)).toEqual({ dispatched: ids.length });
    expect((await jobsIn('q-lost-1')) + (await jobsIn('q-lost-2'))).toBe(ids.length - 1);
    // Recorded: then only the second, short sweep is due, and after it nothing.
    const runId = await currentRunId();
    expect(await redis.get(runKey())).toMatch(new RegExp(`^${runId}:second-sweep-from:\\d+$`));
    expect(await recovery().check()).toMatchObject({ checked: ids.length - 1, requeued: 0 });
    expect(await redis.get(runKey())).toBe(runId);
    expect(await recovery().check()).toBeNull();
  });

  it('a restart that kept most jobs requeues exactly the events whose job is gone', async () => {
    const ws = await seedWorkspace(t.owner);
    const ids = await dispatched([ws.workspaceId], ['q-partial'], 20);
    const before = await t.owner.query(`select id, dispatched_at from outbox_events order by id`);
    // The last second of the append-only file: three jobs missing, and the marker of the old run.
    const q = new Queue('q-partial', { connection: redis, prefix });
    const gone = [ids[3]!, ids[11]!, ids[19]!];
    for (const id of gone) expect(await q.remove(id)).toBe(1);
    await q.close();
    await redis.set(runKey(), 'run-id-of-the-previous-server');

    // Pages of 3: the 20 share one dispatch time (one mark statement), so the keyset goes by id.
    const report = await recovery({ pageSize: 3 }).check();
    expect(report).toMatchObject({ checked: 20, requeued: 3, complete: true });
    const { rows } = await t.owner.query(`select id from outbox_events where status = 'pending' order by id`);
    expect(rows.map((r) => r.id)).toEqual([...gone].sort());
    const after = await t.owner.query(
      `select id, dispatched_at from outbox_events where status = 'dispatched' order by id`,
    );
    expect(after.rows).toEqual(before.rows.filter((r) => !gone.includes(r.id)));
  });

  it('another dispatcher holding the sweep lock keeps this one out until the lock is gone', async () => {
    const ws = await seedWorkspace(t.owner);
    const ids = await dispatched([ws.workspaceId], ['q-lock'], 5);
    await loseEverything();
    await redis.set(`${prefix}:outbox:lost-job-sweep`, 'another-dispatcher', 'PX', 60_000);
    expect(await recovery().check()).toBeNull();
    expect(await statusCounts(t.owner)).toEqual({ dispatched: ids.length });
    // The lock holder's sweep did not finish (it died): once its lock expires, this one sweeps.
    await redis.del(`${prefix}:outbox:lost-job-sweep`);
    expect(await recovery().check()).toMatchObject({ requeued: ids.length });
    expect(await redis.exists(`${prefix}:outbox:lost-job-sweep`)).toBe(0); // released after the sweep
  });

  it('the second sweep waits two leases after the first, then covers the events dispatched since the first', async () => {
    const ws = await seedWorkspace(t.owner);
    const ids = await dispatched([ws.workspaceId], ['q-second'], 4);
    expect(await recovery().check()).toMatchObject({ checked: 4, requeued: 0 });
    // Two leases of an hour have not passed: no second sweep yet.
    expect(await recovery({ leaseMs: 3_600_000 }).check()).toBeNull();

    // A mark that arrived after the first sweep, for a job the old server took down with it; and
    // an event dispatched well before the first sweep (it was checked then), whose job is gone now.
    const q = new Queue('q-second', { connection: redis, prefix });
    expect(await q.remove(ids[1]!)).toBe(1);
    expect(await q.remove(ids[2]!)).toBe(1);
    await q.close();
    await t.owner.query(
      `update outbox_events set dispatched_at = now() - interval '10 minutes' where id = $1`,
      [ids[2]],
    );
    expect(await recovery().check()).toMatchObject({ checked: 3, requeued: 1 });
    expect(await redis.get(runKey())).toBe(await currentRunId());
    const { rows } = await t.owner.query(`select id from outbox_events where status = 'pending'`);
    expect(rows.map((r) => r.id)).toEqual([ids[1]]);
  });

  it('a running dispatcher notices the restart by itself and delivers the lost events again', async () => {
    const ws = await seedWorkspace(t.owner);
    const d = new OutboxDispatcher({
      db: t.agentDb,
      producer,
      batchSize: 100,
      pollIntervalMs: 50,
      lostJobRecovery: { windowSec: 3600, checkIntervalMs: 50 },
    });
    d.start();
    try {
      const ids = await insertEvents(t.owner, ws.workspaceId, 12, { queue: 'q-running' });
      await waitFor('dispatched', async () => (await statusCounts(t.owner)).dispatched === 12);
      expect(await jobsIn('q-running')).toBe(12);
      // No lost job yet: the first check (the marker was missing) requeued nothing.
      await waitFor('the first check recorded', async () => (await redis.get(runKey())) !== null);
      expect(d.stats.lostJobsRequeued).toBe(0);

      await loseEverything();
      await waitFor(
        'redelivered',
        async () => d.stats.lostJobsRequeued === 12 && (await jobsIn('q-running')) === 12,
      );
      await waitFor('dispatched again', async () => (await statusCounts(t.owner)).dispatched === 12);
      const q = new Queue('q-running', { connection: redis, prefix });
      expect((await q.getJob(ids[5]!))?.data).toMatchObject({ workspaceId: ws.workspaceId });
      await q.close();
    } finally {
      await d.stop();
    }
  });
});
