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
 * notify lock). Coalesced: any number of nudges in one event-loop turn, or while a publish is in
 * flight, become one message. Best effort: a lost nudge only costs the dispatcher's polling
 * interval, so errors are swallowed.
 */
export class OutboxNudger {
  private scheduled = false;
  private inFlight = false;
  private again = false;
  /** Workspaces with new events since the last publish: dispatchers claim these first. */
  private readonly workspaces = new Set<string>();
  /** Publishes actually sent (for tests and the benchmark). */
  sent = 0;

  constructor(
    private readonly redis: Publisher,
    readonly channel: string,
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
    this.inFlight = true;
    this.sent++;
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
