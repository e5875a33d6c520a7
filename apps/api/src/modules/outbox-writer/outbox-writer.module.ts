import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Database } from '@listing/db';
import { OutboxFaults, OutboxNudger, OutboxWriter, nudgeChannel, redisOptionsFromUrl } from '@listing/outbox';
import { Redis } from 'ioredis';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';

const NUDGE_REDIS = Symbol('NUDGE_REDIS');

/**
 * The API side of the outbox: OutboxWriter appends events to the request's transaction and,
 * after commit, nudges the dispatchers through Redis PUBLISH (never a NOTIFY inside the
 * transaction). Test-only crash points come from OUTBOX_FAULT (refused outside NODE_ENV=test).
 */
@Global()
@Module({
  providers: [
    {
      provide: NUDGE_REDIS,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => {
        const redis = new Redis(
          redisOptionsFromUrl(config.REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 }),
        );
        redis.on('error', () => undefined); // nudges are best effort: the dispatcher also polls
        return redis;
      },
    },
    {
      provide: OutboxWriter,
      inject: [Database, APP_CONFIG, NUDGE_REDIS],
      useFactory: (db: Database, config: AppConfig, redis: Redis) =>
        new OutboxWriter(db, {
          nudger: new OutboxNudger(redis, nudgeChannel(config.BULLMQ_PREFIX)),
          faults: OutboxFaults.fromEnv(),
        }),
    },
  ],
  exports: [OutboxWriter],
})
export class OutboxWriterModule implements OnApplicationShutdown {
  constructor(@Inject(NUDGE_REDIS) private readonly redis: Redis) {}

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }
}
