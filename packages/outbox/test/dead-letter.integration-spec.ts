import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { connectBullmqRedis, DeadLetterService, QueueProducer, type RedisClient } from '../src';
import { connectedRedis, insertEvents, jobInState } from './helpers';

const t = useTestDatabase();

describe('DeadLetterService.retry (real PostgreSQL and Redis)', () => {
  let redis: RedisClient;
  let producer: QueueProducer;
  let prefix: string;

  beforeAll(async () => {
    redis = await connectedRedis(t.info.redis);
    prefix = `${t.info.bullPrefix}-dead-letter`;
    producer = new QueueProducer(redis, prefix, {
      completedAgeSec: 3600,
      failedAgeSec: 3600,
      handlerBackoffMs: 1,
    });
  });
  afterAll(async () => {
    await producer.close();
    await redis.quit();
  });

  const status = async (id: string) =>
    (await t.owner.query<{ status: string }>('select status from outbox_events where id = $1', [id])).rows[0]!
      .status;

  it('refuses while the job is still active under its worker, and retries once the job has ended', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const [id] = await insertEvents(t.owner, ws, 1, { queue: 'q-dead-busy' });
    // The worker's last attempt wrote the dead letter; BullMQ has not failed the job yet.
    await t.owner.query(
      `update outbox_events set status = 'dead_letter', last_error = 'by the worker' where id = $1`,
      [id],
    );
    const queue = new Queue('q-dead-busy', { connection: redis, prefix });
    await queue.add('test.event', {}, { jobId: id });
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    const connection = connectBullmqRedis(t.info.redis);
    const worker = new Worker(
      'q-dead-busy',
      async () => {
        await ended;
        throw new UnrecoverableError('the last attempt');
      },
      { connection, prefix },
    );
    try {
      await jobInState(queue, id!, 'active');
      const service = new DeadLetterService(t.agentDb, producer);
      await expect(service.retry(id!)).rejects.toMatchObject({ code: 'OUTBOX_JOB_ACTIVE' });
      expect(await status(id!)).toBe('dead_letter');
      expect(await queue.getJobState(id!)).toBe('active');

      end();
      await jobInState(queue, id!, 'failed');
      expect(await service.retry(id!)).toMatchObject({ id, queue: 'q-dead-busy' });
      expect(await status(id!)).toBe('pending');
      expect(await queue.getJob(id!)).toBeUndefined(); // gone: the dispatcher's add is a real one
    } finally {
      end();
      await worker.close();
      await queue.close();
      connection.disconnect();
    }
  });
});
