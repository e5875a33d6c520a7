import type { RedisClient } from './redis-connection';
import { UUID_RE } from './outbox-event';
import type { OutboxLogger } from './outbox-logger';
import { silentLogger } from './outbox-logger';

/**
 * The dispatcher side of the nudge: a dedicated Redis connection in subscriber mode. ioredis
 * re-subscribes after a reconnect; while Redis is away the dispatcher polls.
 */
export class NudgeSubscriber {
  constructor(
    private readonly redis: RedisClient,
    readonly channel: string,
    private readonly logger: OutboxLogger = silentLogger,
  ) {}

  /** onNudge receives the workspace ids the message names (possibly none). */
  start(onNudge: (workspaceIds: string[]) => void): void {
    this.redis.on('message', (channel: string, message: string) => {
      if (channel === this.channel) onNudge(parseNudge(message));
    });
    this.redis.subscribe(this.channel).catch((error: Error) => {
      this.logger.warn('nudge subscription failed; polling only until Redis is back', {
        error: error.message,
      });
    });
  }
}

/** Workspace ids from a nudge message; anything that is not a UUID is ignored. */
export function parseNudge(message: string): string[] {
  return message
    .split(',')
    .slice(0, 1000)
    .filter((id) => UUID_RE.test(id));
}
