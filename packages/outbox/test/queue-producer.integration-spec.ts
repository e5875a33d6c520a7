import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { useTestDatabase } from '@listing/testing';
import { QueueProducer, type ClaimedEvent } from '../src';
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
    ...overrides,
  };
}

/** A single event takes the plain add path, several take addBulk: both must give the same job. */
describe('QueueProducer', () => {
  let redis: Redis;
  let producer: QueueProducer;
  let queue: Queue;

  beforeAll(async () => {
    redis = await connectedRedis(t.info.redisUrl);
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
    const many = [event(), event({ maxAttempts: 3 })];
    await producer.addBulk('producer-test', [one]);
    await producer.addBulk('producer-test', many);
    for (const e of [one, ...many]) {
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
    await producer.addBulk('producer-test', [{ ...first, payload: { n: 'bulk' } }, event()]);
    expect((await queue.getJob(first.id))!.data.payload).toEqual({ n: 'first' });
    expect(await queue.getWaitingCount()).toBe(5); // 3 from the first test, `first` once, 1 new
  });
});
