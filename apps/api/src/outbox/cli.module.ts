import { Module } from '@nestjs/common';
import { Database } from '@listing/db';
import { connectProducerRedis, DeadLetterService, QueueProducer, type RedisClient } from '@listing/outbox';
import { OUTBOX_CONFIG, type OutboxConfig } from '../config/outbox-config';
import { redisTarget } from '../config/redis-config';
import { OperatorAuditRepository } from './operator-audit.repository';
import { CLI_REDIS, OutboxCli } from './outbox-cli.service';
import { outboxRepositoryProvider } from './outbox-repository.provider';

/** The operator CLI's providers (no feature module: it handles events, never their payloads). */
@Module({
  providers: [
    outboxRepositoryProvider,
    OperatorAuditRepository,
    OutboxCli,
    {
      provide: CLI_REDIS,
      inject: [OUTBOX_CONFIG],
      useFactory: (config: OutboxConfig) => {
        const redis = connectProducerRedis(redisTarget(config));
        redis.on('error', () => undefined); // a retry waits for Redis and says so
        return redis;
      },
    },
    {
      provide: QueueProducer,
      inject: [CLI_REDIS, OUTBOX_CONFIG],
      useFactory: (redis: RedisClient, config: OutboxConfig) =>
        new QueueProducer(redis, config.BULLMQ_PREFIX),
    },
    {
      provide: DeadLetterService,
      inject: [Database, QueueProducer],
      useFactory: (db: Database, producer: QueueProducer) => new DeadLetterService(db, producer),
    },
  ],
})
export class CliModule {}
