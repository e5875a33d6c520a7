import {
  type DynamicModule,
  Global,
  Inject,
  Module,
  type OnApplicationShutdown,
  type Provider,
} from '@nestjs/common';
import { Database, PreparedStatementsBehindPoolerError } from '@listing/db';
import { connectRedis, type RedisClient, type RedisTarget } from '@listing/outbox';

export const REDIS = Symbol('REDIS');
/** Where this process's BullMQ queues live: Redis (one server or a cluster) and the key prefix. */
export const QUEUE_SETTINGS = Symbol('QUEUE_SETTINGS');

export interface QueueSettings {
  readonly redis: RedisTarget;
  readonly prefix: string;
  /** OUTBOX_NUDGE_GAP_MS: the writer's least time between two nudges. */
  readonly nudgeGapMs: number;
}

export interface InfrastructureOptions {
  /** Shown as application_name in pg_stat_activity: tells the process roles apart. */
  readonly applicationName: string;
  readonly databaseUrl: string;
  readonly poolSize: number;
  /** False behind a pooler that cannot keep named prepared statements (DATABASE_PREPARED_STATEMENTS). */
  readonly preparedStatements: boolean;
  readonly queues: QueueSettings;
  /** The role's parsed configuration objects (APP_CONFIG, OUTBOX_CONFIG, ...), as value providers. */
  readonly configs: Provider[];
}

/**
 * Process-wide infrastructure for every role: its configuration, the database provider, a Redis
 * client (lazy: a role that never uses it never connects) and the queue settings. Global: every
 * module of every role needs these, and they have one instance per process.
 */
@Global()
@Module({})
export class InfrastructureModule implements OnApplicationShutdown {
  static forRoot(options: InfrastructureOptions): DynamicModule {
    return {
      module: InfrastructureModule,
      providers: [
        ...options.configs,
        { provide: QUEUE_SETTINGS, useValue: options.queues },
        {
          provide: Database,
          useFactory: async () => {
            const db = new Database({
              connectionString: options.databaseUrl,
              max: options.poolSize,
              applicationName: options.applicationName,
              preparedStatements: options.preparedStatements,
            });
            await refuseNamedStatementsBehindPooler(db);
            return db;
          },
        },
        {
          provide: REDIS,
          useFactory: () => {
            const redis = connectRedis(options.queues.redis, { maxRetriesPerRequest: 1, lazyConnect: true });
            // Unheard, ioredis prints each retry's error as a raw stderr line; readiness reports it.
            redis.on('error', () => undefined);
            return redis;
          },
        },
      ],
      exports: [
        ...options.configs.map((p) => (p as { provide: symbol }).provide),
        QUEUE_SETTINGS,
        Database,
        REDIS,
      ],
    };
  }

  constructor(
    private readonly db: Database,
    @Inject(REDIS) private readonly redis: RedisClient,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    this.redis.disconnect();
    await this.db.close();
  }
}

/**
 * A role that prepares statements refuses to start behind a pooler in transaction mode, where every
 * authenticated request would fail once its transaction lands on another server connection.
 */
async function refuseNamedStatementsBehindPooler(db: Database): Promise<void> {
  try {
    await db.checkPreparedStatements();
  } catch (error) {
    await db.close();
    if (error instanceof PreparedStatementsBehindPoolerError) {
      throw new Error(`${error.message}: set DATABASE_PREPARED_STATEMENTS=0 (docs/scaling.md)`);
    }
    throw error;
  }
}
