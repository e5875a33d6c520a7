import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { useTestDatabase } from '@listing/testing';
import { QueueProducer, type ClaimedEvent, type RedisClient } from '../src';
import { connectedRedis } from './helpers';

const t = useTestDatabase();

function event(overrides: Partial<ClaimedEvent> = {}): ClaimedEvent {
  return {
    id: randomUUID(),
    workspaceId: randomUUID(),
    queue: 'producer-test',
    type: 'test.event',
    payload: { n: 1 },
    attemptCount: 0,
    maxAttempts: 7,
    createdAt: new Date(),
    lockedUntil: new Date(Date.now() + 30_000),
    lease: '0',
    ...overrides,
  };
}

/** A few events go as plain adds, many through BullMQ's addBulk: both must give the same job. */
describe('QueueProducer', () => {
  let redis: RedisClient;
  let producer: QueueProducer;
  let queue: Queue;

  beforeAll(async () => {
    redis = await connectedRedis(t.info.redis);
    producer = new QueueProducer(redis, t.info.bullPrefix, {
      completedAgeSec: 600,
      failedAgeSec: 3600,
      handlerBackoffMs: 250,
    });
    queue = new Queue('producer-test', { connection: redis, prefix: t.info.bullPrefix });
  });

  afterAll(async () => {
    await queue.close();
    await producer.close();
    await redis.quit();
  });

  it('one event or several: the same job (id, name, data, attempts, backoff, retention)', async () => {
    const one = event();
    const few = [event(), event({ maxAttempts: 3 })];
    const many = Array.from({ length: 20 }, (_, i) => event({ maxAttempts: 1 + i }));
    await producer.addBulk('producer-test', [one]);
    await producer.addBulk('producer-test', few);
    await producer.addBulk('producer-test', many);
    for (const e of [one, ...few, ...many]) {
      const job = (await queue.getJob(e.id))!;
      expect(job.name).toBe('test.event');
      expect(job.data).toEqual({
        v: 1,
        workspaceId: e.workspaceId,
        payload: { n: 1 },
        createdAt: e.createdAt.getTime(),
      });
      expect(job.opts).toMatchObject({
        jobId: e.id,
        attempts: e.maxAttempts,
        backoff: { type: 'exponential', delay: 250 },
        removeOnComplete: { age: 600 },
        removeOnFail: { age: 3600 },
      });
    }
  });

  it('an id BullMQ still holds is kept, not replaced, on either path', async () => {
    const first = event({ payload: { n: 'first' } });
    await producer.addBulk('producer-test', [first]);
    await producer.addBulk('producer-test', [{ ...first, payload: { n: 'again' } }]);
    await producer.addBulk('producer-test', [{ ...first, payload: { n: 'few' } }, event()]);
    const many = Array.from({ length: 19 }, () => event());
    await producer.addBulk('producer-test', [{ ...first, payload: { n: 'many' } }, ...many]);
    expect((await queue.getJob(first.id))!.data.payload).toEqual({ n: 'first' });
    // 23 from the first test, `first` once, 1 + 19 new
    expect(await queue.getWaitingCount()).toBe(44);
  });

  it('a few adds where one is refused: the others are added, then the refusal is thrown', async () => {
    const good = [event(), event()];
    const refused = event({ id: '12345' }); // BullMQ refuses integer job ids
    await expect(producer.addBulk('producer-test', [good[0]!, refused, good[1]!])).rejects.toThrow(
      /cannot be integers/,
    );
    for (const e of good) expect((await queue.getJob(e.id))?.id).toBe(e.id);
  });
});
