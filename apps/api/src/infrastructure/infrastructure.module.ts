import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Database } from '@listing/db';
import { Redis } from 'ioredis';
import { APP_CONFIG, type AppConfig, loadConfig } from '../config/app-config';

export const REDIS = Symbol('REDIS');

/** Process-wide infrastructure: configuration, the database provider and a Redis client. */
@Global()
@Module({
  providers: [
    { provide: APP_CONFIG, useFactory: () => loadConfig() },
    {
      provide: Database,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        new Database({
          connectionString: config.DATABASE_URL,
          max: config.DATABASE_POOL_SIZE,
          applicationName: 'api',
        }),
    },
    {
      provide: REDIS,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: false }),
    },
  ],
  exports: [APP_CONFIG, Database, REDIS],
})
export class InfrastructureModule implements OnApplicationShutdown {
  constructor(
    private readonly db: Database,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    this.redis.disconnect();
    await this.db.close();
  }
}
