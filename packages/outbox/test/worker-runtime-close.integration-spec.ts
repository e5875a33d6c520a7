import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { z } from 'zod';
import {
  defineJob,
  JobRegistry,
  OutboxDispatcher,
  OutboxWorkerRuntime,
  QueueProducer,
  type OutboxLogger,
  type RedisClient,
} from '../src';
import { connectedRedis, waitFor } from './helpers';

const t = useTestDatabase();
const QUEUE = 'q-close';
const slowJob = defineJob({ name: 'close.slow', queue: QUEUE, schema: z.object({}) });

/**
 * A BullMQ Worker whose close() never returns once its jobs are done: what a close racing the
 * recovery of its blocking connection does after a Redis Cluster failover (docs/scaling.md; the
 * real race is exercised by apps/api/test/outbox/cluster-failover.e2e-spec.ts, about one run in
 * eight under load). Stubbed here so the runtime's answer is checked every run.
 */
describe('OutboxWorkerRuntime.close with a Worker whose close hangs', () => {
  let redis: RedisClient;
  let producer: QueueProducer;
  let queue: Queue;

  beforeAll(async () => {
    redis = await connectedRedis(t.info.redis);
    producer = new QueueProducer(redis, t.info.bullPrefix);
    queue = new Queue(QUEUE, { connection: redis, prefix: t.info.bullPrefix });
  });
  afterAll(async () => {
    await queue.close();
    await producer.close();
    await redis.quit();
  });

  it('waits for the active job, then leaves the idle Worker behind after the grace', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let started = false;
    const registry = new JobRegistry().handle(slowJob, async () => {
      started = true;
      await released;
      return null;
    });
    const warnings: Array<[string, Record<string, unknown> | undefined]> = [];
    const logger: OutboxLogger = { info: () => {}, error: () => {}, warn: (m, f) => warnings.push([m, f]) };
    const runtime = new OutboxWorkerRuntime({
      db: t.agentDb,
      registry,
      redis: t.info.redis,
      prefix: t.info.bullPrefix,
      queues: [QUEUE],
      failedSweepIntervalMs: 0,
      idleCloseGraceMs: 300,
      logger,
    });
    await runtime.start();
    const ws = (await seedWorkspace(t.owner, 'close-hang')).workspaceId;
    const id = randomUUID();
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload) values ($1, $2, $3, $4, '{}')`,
      [id, ws, QUEUE, slowJob.name],
    );
    await new OutboxDispatcher({ db: t.agentDb, producer }).drain();
    await waitFor('the job in its handler', async () => started);

    // BullMQ's close: it finishes the active job as usual, then never returns.
    const realClose = Worker.prototype.close;
    const stuck: Worker[] = [];
    const spy = jest.spyOn(Worker.prototype, 'close').mockImplementation(function (this: Worker) {
      stuck.push(this);
      void realClose.call(this); // the real work, whose end the runtime never sees
      return new Promise<void>(() => {});
    });
    let closed = false;
    try {
      const closing = runtime.close().then(() => (closed = true));
      await new Promise((r) => setTimeout(r, 1000)); // 3× the grace: the job is still running
      expect(closed).toBe(false);
      expect(runtime.closePending()).toMatch(/the workers of q-close/);
      release();
      await Promise.race([closing, new Promise((r) => setTimeout(r, 5000))]);
      expect(closed).toBe(true);
    } finally {
      spy.mockRestore();
      release();
    }
    // The job was finished, not abandoned: completed in BullMQ, and the Worker was left behind.
    await waitFor('the job completed', async () => (await queue.getJob(id))?.finishedOn);
    expect(stuck).toHaveLength(1);
    expect(warnings).toEqual([
      ['worker close still pending with no job active: left behind', { queue: QUEUE, graceMs: 300 }],
    ]);
  });
});
