import type { Database } from '@listing/db';
import type { JobRegistry } from './job-registry';
import { silentLogger, type OutboxLogger } from './outbox-logger';
import { OutboxRepository } from './outbox.repository';
import { redactError } from './redaction';

export interface DeadLetterReactorOptions {
  readonly db: Database;
  readonly registry: JobRegistry;
  readonly logger?: OutboxLogger;
}

/**
 * Runs each dead letter's reaction (@OnOutboxDeadLetter) once, whichever path dead-lettered it: the
 * dispatcher (enqueue attempts used up), the worker's last attempt, a job stalled too often, the
 * failed-job sweep. Per event, one transaction bound to its workspace locks the event (SKIP
 * LOCKED: several workers share the work), runs the reaction and records it
 * (`dead_letter_handled_at`, sql/015), so the domain change and the record commit together. A job
 * without a reaction, or a payload that no longer parses, is recorded as handled with nothing
 * done. A reaction that throws rolls its event back; it is logged and tried again on the next run.
 */
export class DeadLetterReactor {
  private readonly outbox: OutboxRepository;
  private readonly logger: OutboxLogger;
  private stopped = false;

  constructor(private readonly options: DeadLetterReactorOptions) {
    this.outbox = new OutboxRepository(options.db);
    this.logger = options.logger ?? silentLogger;
  }

  stop(): void {
    this.stopped = true;
  }

  /** Reacts to every dead letter not reacted to yet; returns how many it recorded. */
  async run(): Promise<number> {
    const failed = new Set<string>(); // this run's failing events: not picked again until the next
    let handled = 0;
    for (;;) {
      const workspaces = await this.outbox.unhandledDeadLetterWorkspaces(100);
      let progress = false;
      for (const workspaceId of workspaces) {
        for (;;) {
          if (this.stopped) return handled;
          const outcome = await this.reactToNext(workspaceId, failed);
          if (outcome === 'failed') continue; // that event is skipped now; the workspace's next one
          if (outcome !== 'handled') break;
          handled++;
          progress = true;
        }
      }
      if (!progress) return handled; // nothing left, or only failing reactions and locked events
    }
  }

  /**
   * 'failed': that event's reaction threw (excluded for the rest of this run); 'unavailable': the
   * transaction failed before an event was read (the database, most likely).
   */
  private async reactToNext(
    workspaceId: string,
    failed: Set<string>,
  ): Promise<'handled' | 'none' | 'failed' | 'unavailable'> {
    let eventId: string | undefined;
    try {
      return await this.options.db.withWorkspace(workspaceId, async () => {
        const dead = await this.outbox.nextUnhandledDeadLetter([...failed]);
        if (!dead) return 'none';
        eventId = dead.id;
        const definition = this.options.registry.job(dead.type);
        const reaction = this.options.registry.deadLetterReaction(dead.type);
        if (definition && reaction) {
          const parsed = definition.schema.safeParse(dead.payload);
          if (parsed.success) await reaction(parsed.data, { eventId: dead.id, workspaceId });
          else
            this.logger.warn('dead letter with a payload that does not parse: no reaction', {
              event: dead.id,
            });
        }
        await this.outbox.markDeadLetterHandled(dead.id);
        return 'handled';
      });
    } catch (error) {
      if (eventId) failed.add(eventId);
      this.logger.error('dead-letter reaction failed; tried again on the next run', {
        workspace: workspaceId,
        event: eventId,
        error: redactError(error),
      });
      return eventId ? 'failed' : 'unavailable';
    }
  }
}
