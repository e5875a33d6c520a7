import type { Redis } from 'ioredis';
import type { OutboxLogger } from './outbox-logger';
import { silentLogger } from './outbox-logger';

/**
 * The dispatcher side of the nudge: a dedicated Redis connection in subscriber mode. ioredis
 * re-subscribes after a reconnect; while Redis is away the dispatcher polls.
 */
export class NudgeSubscriber {
  constructor(
    private readonly redis: Redis,
    readonly channel: string,
    private readonly logger: OutboxLogger = silentLogger,
  ) {}

  start(onNudge: () => void): void {
    this.redis.on('message', (channel: string) => {
      if (channel === this.channel) onNudge();
    });
    this.redis.subscribe(this.channel).catch((error: Error) => {
      this.logger.warn('nudge subscription failed; polling only until Redis is back', {
        error: error.message,
      });
    });
  }
}
