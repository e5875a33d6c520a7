import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { DeadLetterService, OutboxRepository, QueueProducer, type RetriedDeadLetter } from '@listing/outbox';
import type { RedisClient } from '@listing/outbox';
import { OperatorAuditRepository } from './operator-audit.repository';

/** The CLI's own Redis connection (the producer's), waited for before a retry. */
export const CLI_REDIS = Symbol('CLI_REDIS');

/**
 * What the operator CLI does (cli.ts parses the arguments and prints). Connects as outbox_agent
 * (sql/012); cross-workspace reads go through the narrow functions of sql/003, every write runs
 * under the event's workspace; every retry is recorded in audit_events.
 */
@Injectable()
export class OutboxCli implements OnApplicationShutdown {
  constructor(
    private readonly outbox: OutboxRepository,
    private readonly deadLetters: DeadLetterService,
    private readonly producer: QueueProducer,
    private readonly audit: OperatorAuditRepository,
    @Inject(CLI_REDIS) private readonly redis: RedisClient,
  ) {}

  stats() {
    return this.outbox.stats();
  }

  listDeadLetters(queue: string | null, limit: number) {
    return this.deadLetters.list({ queue }, limit);
  }

  async retry(eventId: string, actor: string): Promise<string[]> {
    await this.waitForRedis();
    const done = await this.deadLetters.retry(eventId, this.recordAs(actor));
    return [done.id];
  }

  async retryAll(queue: string | null, actor: string): Promise<string[]> {
    await this.waitForRedis();
    const done = await this.deadLetters.retryAll({ queue }, this.recordAs(actor));
    return done.map((d) => d.id);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.producer.close();
    this.redis.disconnect();
  }

  private recordAs(actor: string) {
    return (retried: RetriedDeadLetter) => this.audit.deadLetterRetried(actor, retried);
  }

  private async waitForRedis(): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('Redis is not reachable')), 5000);
      this.redis.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
