import { type DynamicModule, Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Database } from '@listing/db';
import { Redis } from 'ioredis';
import { APP_CONFIG, type AppConfig } from '../config/app-config';

export const REDIS = Symbol('REDIS');

/** Process-wide infrastructure: configuration, the database provider and a Redis client. */
@Global()
@Module({})
export class InfrastructureModule implements OnApplicationShutdown {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: InfrastructureModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        {
          provide: Database,
          useFactory: () =>
            new Database({
              connectionString: config.DATABASE_URL,
              max: config.DATABASE_POOL_SIZE,
              applicationName: 'api',
            }),
        },
        {
          provide: REDIS,
          useFactory: () => {
            const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
            // Unheard, ioredis prints each retry's error as a raw stderr line; readiness reports it.
            redis.on('error', () => undefined);
            return redis;
          },
        },
      ],
      exports: [APP_CONFIG, Database, REDIS],
    };
  }

  constructor(
    private readonly db: Database,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    this.redis.disconnect();
    await this.db.close();
  }
}
