import { Cluster, Redis } from 'ioredis';
import {
  seedWorkspace,
  startRedisCluster,
  useTestDatabase,
  type RunningRedisCluster,
} from '@listing/testing';
import {
  DISPATCHER,
  WORKER,
  createTestTables,
  dispatchedCount,
  effectTotals,
  insertTestEvents,
  killAll,
  roleEnv,
  spawnNode,
  waitUntil,
} from './processes';

const t = useTestDatabase();
jest.setTimeout(120_000);

/**
 * A Redis Cluster failover under the running roles: the master that serves the queue's slot is
 * killed with -9 and its replica promoted by the cluster itself (no proxy, no operator), while a
 * dispatcher and a worker keep running. Redis replicates asynchronously, so the replica is first
 * held back (`CLIENT PAUSE ALL` stops it applying the replication stream, not the cluster bus
 * that elects it): the jobs dispatched meanwhile exist on the old master only and are gone after
 * the promotion. The dispatcher's lost-job recovery notices the slot's new run id and delivers
 * them again; every effect happens once. The single-server failover is redis-failover.e2e-spec.
 */
describe('Redis Cluster failover: the queue slot’s master killed, its replica promoted', () => {
  let cluster: RunningRedisCluster | undefined;
  const clients: Array<Redis | Cluster> = [];
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await killAll();
    await cluster?.stop();
  });

  it('keeps the roles running and loses no event; each effect once', async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 1000 });
    const prefix = `{${t.info.bullPrefix.replace(/[{}]/g, '')}-cf}`;
    const victim = await cluster.shardOf(prefix);
    expect(victim.replicas).toHaveLength(1);
    const replicaPort = victim.replicas[0]!;
    const seed = cluster.ports.find((port) => port !== victim.master)!;
    const onCluster = new Cluster([{ host: '127.0.0.1', port: seed }], {
      clusterRetryStrategy: () => 100,
      redisOptions: { maxRetriesPerRequest: 1 },
    });
    onCluster.on('error', () => undefined);
    const onReplica = new Redis({ port: replicaPort, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    onReplica.on('error', () => undefined);
    clients.push(onCluster, onReplica);
    await onReplica.readonly(); // a cluster replica answers reads of its slots only after READONLY
    const completedKey = `${prefix}:outbox-test:completed`;

    await createTestTables(t.owner);
    const ws = (await seedWorkspace(t.owner, 'cluster-failover')).workspaceId;
    const env = roleEnv(t, {
      REDIS_URL: `redis://127.0.0.1:${seed}`,
      REDIS_CLUSTER: '1',
      BULLMQ_PREFIX: prefix,
      OUTBOX_REDIS_RETRY_MS: '200',
      OUTBOX_RECLAIM_INTERVAL_MS: '200',
      OUTBOX_STOP_TIMEOUT_MS: '10000',
    });
    const dispatcher = spawnNode('dispatcher', DISPATCHER, env);
    const worker = spawnNode('worker', WORKER, env);
    await dispatcher.waitForOutput(/lost-job sweep finished/);
    await worker.waitForOutput(/worker ready/);

    const insert = (n: number, tag: string) => insertTestEvents(t.owner, ws, n, tag);
    const dispatched = (ids: string[]) => dispatchedCount(t.owner, ids);
    const effects = (ids: string[]) => effectTotals(t.owner, ids);

    // 30 events run while both copies of the slot have everything.
    const replicated = await insert(30, 'replicated-');
    await waitUntil('the first 30 to run', async () => (await effects(replicated)).events === 30);
    await waitUntil(
      'the replica to hold the first 30 completed',
      async () => (await onReplica.zcard(completedKey)) === 30,
    );

    // The replica stops applying the stream; 30 more are dispatched to the master alone.
    const pauseMs = 12_000;
    await onReplica.client('PAUSE', pauseMs, 'ALL');
    const pausedUntil = Date.now() + pauseMs;
    const unreplicated = await insert(30, 'unreplicated-');
    await waitUntil('30 more dispatched', async () => (await dispatched(unreplicated)) === 30);

    // The master dies; the cluster promotes the replica (its bus is not paused).
    await cluster.kill(victim.master);
    await waitUntil(
      'the replica to be promoted',
      async () => (await cluster!.shardOf(prefix)).master === replicaPort,
      20_000,
      100,
    );
    // Promoted with what it had applied: had the pause ended first, it would hold the 30 jobs.
    expect(Date.now()).toBeLessThan(pausedUntil);

    // The slot's new run id starts a sweep; the 30 jobs the replica never saw are re-delivered.
    await dispatcher.waitForOutput(/"requeued":30[^\n]*lost-job sweep finished/, 40_000);
    const all = [...replicated, ...unreplicated];
    await waitUntil('every event ran', async () => (await effects(all)).events === 60, 40_000, 100);
    // BullMQ completes the re-delivered 30 too (the inbox skips their effect when it already ran).
    await waitUntil(
      'the promoted replica to have completed all 60',
      async () => (await onCluster.zcard(completedKey)) === 60,
      40_000,
    );
    expect(await effects(all)).toEqual({ n: 60, events: 60 });
    expect(await dispatched(all)).toBe(60); // none pending again, none dead-lettered
    expect(await dispatcher.stop()).toEqual({ code: 0, signal: null });
    // A clean stop too: its BullMQ close used to hang here about one run in seven under load
    // (ioredis 6.0.0, and a BullMQ reconnect racing the close: docs/scaling.md).
    const exit = await worker.stop();
    if (exit.code !== 0)
      console.warn(`worker stop: ${JSON.stringify(exit)}\n${worker.output().slice(-6000)}`);
    expect(exit).toEqual({ code: 0, signal: null });
  });
});
