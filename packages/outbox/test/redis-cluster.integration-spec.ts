import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import {
  seedWorkspace,
  startRedisCluster,
  useTestDatabase,
  type RunningRedisCluster,
} from '@listing/testing';
import { z } from 'zod';
import {
  JobRegistry,
  NudgeSubscriber,
  OutboxDispatcher,
  OutboxNudger,
  OutboxWorkerRuntime,
  QueueProducer,
  connectBullmqRedis,
  connectProducerRedis,
  connectRedis,
  defineJob,
  nudgeChannel,
  type RedisClient,
} from '../src';
import { connectedRedis, holderOf, insertEvents, waitFor } from './helpers';

jest.setTimeout(60_000);
const t = useTestDatabase();
const QUEUE = 'q-cluster';
const job = defineJob({ name: 'cluster.event', queue: QUEUE, schema: z.object({ n: z.number() }) });

/**
 * The outbox on a Redis Cluster of its own (3 masters), whatever Redis the rest of the run uses:
 * why the two settings (REDIS_CLUSTER, a hash-tagged prefix) are needed, and that with both the
 * whole path works. The prefix is chosen so its slot is NOT on the seed node: every command has to
 * follow the cluster's redirection. The e2e suites run against a cluster too (pnpm test:cluster).
 */
describe('the outbox on a Redis Cluster', () => {
  let cluster: RunningRedisCluster;
  let prefix: string;
  const clients: RedisClient[] = [];
  const client = (c: RedisClient) => (clients.push(c), c);

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3 });
    const seed = new Redis(cluster.url);
    try {
      for (let i = 0; ; i++) {
        const candidate = `{cluster-${i}}`;
        const moved = await seed.get(`${candidate}:probe`).then(
          () => false,
          (error: Error) => /^MOVED/.test(error.message),
        );
        if (moved) {
          prefix = candidate;
          break;
        }
      }
    } finally {
      seed.disconnect();
    }
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await cluster?.stop();
  });

  it('a client that does not know it talks to a cluster is redirected and fails (REDIS_CLUSTER is needed)', async () => {
    const standalone = client(await connectedRedis({ url: cluster.url, cluster: false }));
    const producer = new QueueProducer(standalone, prefix);
    await expect(producer.redisRunId()).rejects.toThrow(/MOVED/);
    await producer.close();
  });

  it('a prefix without a hash tag spreads a queue over several slots: BullMQ cannot add (the config refuses it: apps/api/test/outbox-config.spec.ts)', async () => {
    const redis = client(connectProducerRedis({ url: cluster.url, cluster: true }));
    const queue = new Queue(QUEUE, { connection: redis, prefix: 'untagged' });
    await expect(queue.add('x', {})).rejects.toThrow(/CROSSSLOT/);
    await queue.close();
  });

  it('with both: dispatch, nudge, work and the run id of the server holding the keys', async () => {
    const target = { url: cluster.url, cluster: true };
    const ws = await seedWorkspace(t.owner);
    const producer = new QueueProducer(client(connectProducerRedis(target)), prefix);

    // The nudge crosses nodes: a PUBLISH on one node's connection reaches a subscriber on another.
    const received: string[][] = [];
    new NudgeSubscriber(client(connectRedis(target)), nudgeChannel(prefix)).start((ids) =>
      received.push(ids),
    );
    const publisher = client(connectRedis(target));
    await waitFor('the nudge to arrive', async () => {
      new OutboxNudger(publisher, nudgeChannel(prefix)).nudge(ws.workspaceId);
      await new Promise((r) => setTimeout(r, 100));
      return received.some((ids) => ids.includes(ws.workspaceId));
    });

    const seen = new Set<number>();
    const runtime = new OutboxWorkerRuntime({
      db: t.agentDb,
      registry: new JobRegistry().handle(job, async (payload) => {
        seen.add(payload.n);
        return null;
      }),
      redis: target,
      prefix,
      queues: [QUEUE],
      failedSweepIntervalMs: 0,
    });
    await runtime.start();
    try {
      const ids = await insertEvents(t.owner, ws.workspaceId, 50, { queue: QUEUE, type: job.name });
      await new OutboxDispatcher({ db: t.agentDb, producer }).drain();
      await waitFor('every event handled', async () => seen.size === 50);
      // The inbox row commits just after its handler returns: read until the last one has.
      const inboxed = async () =>
        (
          await t.owner.query<{ n: number }>(
            `select count(*)::int as n from outbox_inbox where event_id = any($1::uuid[])`,
            [ids],
          )
        ).rows[0]!.n;
      await waitFor('every inbox row committed', async () => (await inboxed()) === 50);
    } finally {
      await runtime.close();
    }

    // Lost-job recovery compares this run id: it must be that of the master holding the prefix's
    // slot (asked directly), not of whichever node a keyless INFO lands on.
    const holder = await holderOf(producer.redis, `${prefix}:outbox:run-id`);
    expect(await producer.redisRunId()).toBe(/^run_id:(\w+)/m.exec(await holder.info('server'))![1]);
    await producer.close();
  });

  it('every node gone: a waiting cluster client still ends on disconnect, and a worker closes', async () => {
    // A cluster of its own: this test kills it. With ioredis 6.0.0 a Cluster disconnected while
    // waiting to reconnect (no node connection left) never emitted `end`, and BullMQ's
    // Worker.close() waits for its blocking connection's end: the worker's stop hung for good
    // (seen after failovers under load). The first check is that property itself, so it holds
    // whatever the runtime does around a hung close (worker-runtime.ts, closeWorker).
    const doomed = await startRedisCluster({ masters: 3 });
    const waiting = connectBullmqRedis({ url: doomed.url, cluster: true });
    waiting.on('error', () => undefined);
    const runtime = new OutboxWorkerRuntime({
      db: t.agentDb,
      registry: new JobRegistry().handle(job, async () => null),
      redis: { url: doomed.url, cluster: true },
      prefix,
      queues: [QUEUE],
      failedSweepIntervalMs: 0,
    });
    let closed = false;
    try {
      await runtime.start();
      await waiting.ping();
      for (const port of doomed.ports) await doomed.kill(port);
      // Long enough for every client to see its nodes gone and back off (100 ms, then 200 …).
      await new Promise((r) => setTimeout(r, 1500));
      // A command finds every node gone: the client drops its pool and waits to reconnect.
      void waiting.ping().catch(() => undefined);
      await waitFor('the client waiting to reconnect', async () => waiting.status === 'reconnecting');
      const ended = new Promise<string>((r) => waiting.once('end', () => r('ended')));
      waiting.disconnect();
      expect(await Promise.race([ended, new Promise((r) => setTimeout(() => r('no end'), 5000))])).toBe(
        'ended',
      );
      const closing = runtime.close().then(() => (closed = true));
      await Promise.race([closing, new Promise((r) => setTimeout(r, 10_000))]);
      expect(closed ? 'closed' : `still closing: ${runtime.closePending()}`).toBe('closed');
    } finally {
      // A hung close leaves its Worker to jest's teardown: kill() would wait on the same end.
      if (!closed) void runtime.kill();
      await doomed.stop();
    }
  });
});
