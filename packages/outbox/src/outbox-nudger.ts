/** Anything that can PUBLISH (an ioredis client). */
export interface Publisher {
  publish(channel: string, message: string): Promise<unknown>;
}

export function nudgeChannel(prefix: string): string {
  return `${prefix}:outbox:nudge`;
}

/**
 * The writer-side wake-up signal: a Redis PUBLISH sent after the business transaction commits,
 * never inside it (a NOTIFY in the transaction serialises every commit on PostgreSQL's global
 * notify lock). Coalesced: any number of nudges in one event-loop turn, while a publish is in
 * flight, or within the gap after the last one, become one message. Best effort: a lost nudge
 * only costs the dispatcher's polling interval, so errors are swallowed.
 */
export class OutboxNudger {
  private scheduled = false;
  private inFlight = false;
  private again = false;
  /** Workspaces with new events since the last publish: dispatchers claim these first. */
  private readonly workspaces = new Set<string>();
  /** Publishes actually sent (for tests and the benchmark). */
  sent = 0;
  private lastSentAt = -Infinity;

  /**
   * gapMs: least time between two publishes (0 = none). A nudge after a quiet spell goes at once;
   * under load the commits of one gap share a message, which costs the writer, Redis and every
   * dispatcher one socket write each instead of one per commit.
   */
  constructor(
    private readonly redis: Publisher,
    readonly channel: string,
    private readonly gapMs = 0,
  ) {}

  nudge(workspaceId?: string): void {
    if (workspaceId) this.workspaces.add(workspaceId);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    const early = this.lastSentAt + this.gapMs - performance.now();
    if (early > 0) {
      this.scheduled = true;
      setTimeout(() => this.flush(), early);
      return;
    }
    this.inFlight = true;
    this.sent++;
    this.lastSentAt = performance.now();
    // The message names the workspaces (ids only) so a dispatcher can claim them at once instead
    // of waiting for its round-robin pass to reach them; '1' when none is known.
    const message = this.workspaces.size ? [...this.workspaces].join(',') : '1';
    this.workspaces.clear();
    this.redis
      .publish(this.channel, message)
      .catch(() => undefined)
      .finally(() => {
        this.inFlight = false;
        if (this.again) {
          this.again = false;
          this.nudge();
        }
      });
  }
}
