import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  OutboxFaults,
  OutboxNudger,
  OutboxWriter,
  connectRedis,
  nudgeChannel,
  type RedisClient,
} from '@listing/outbox';
import { QUEUE_SETTINGS, type QueueSettings } from '../../infrastructure/infrastructure.module';

const NUDGE_REDIS = Symbol('NUDGE_REDIS');

/**
 * The writing side of the outbox: OutboxWriter appends events to the caller's transaction and,
 * after commit, nudges the dispatchers through Redis PUBLISH (never a NOTIFY inside the
 * transaction). Test-only crash points come from OUTBOX_FAULT (refused outside NODE_ENV=test).
 */
@Module({
  providers: [
    {
      provide: NUDGE_REDIS,
      inject: [QUEUE_SETTINGS],
      useFactory: (queues: QueueSettings) => {
        const redis = connectRedis(queues.redis, { lazyConnect: true, maxRetriesPerRequest: 1 });
        redis.on('error', () => undefined); // nudges are best effort: the dispatcher also polls
        return redis;
      },
    },
    {
      provide: OutboxWriter,
      inject: [Database, QUEUE_SETTINGS, NUDGE_REDIS],
      useFactory: (db: Database, queues: QueueSettings, redis: RedisClient) =>
        new OutboxWriter(db, {
          nudger: new OutboxNudger(redis, nudgeChannel(queues.prefix), queues.nudgeGapMs),
          faults: OutboxFaults.fromEnv(),
        }),
    },
  ],
  exports: [OutboxWriter],
})
export class OutboxWriterModule implements OnApplicationShutdown {
  constructor(@Inject(NUDGE_REDIS) private readonly redis: RedisClient) {}

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }
}
