import type { Database } from '@listing/db';
import type { JobRegistry } from './job-registry';
import { silentLogger, type OutboxLogger } from './outbox-logger';
import { OutboxRepository } from './outbox.repository';
import { redactError } from './redaction';

const REACTION_LOCK_TIMEOUT_MS = 5000;

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
 * done; a job this process does not know is left for one that does. A reaction that throws (or
 * waits more than 5 s on a lock) rolls its event back; it is logged and tried again next run.
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

  /**
   * Reacts to every dead letter not reacted to yet, in one pass over the workspaces holding them
   * (in id order: workspaces whose reactions keep failing cannot hide the others); returns how
   * many it recorded. Skipped events wait for the next run.
   */
  async run(): Promise<number> {
    const skipped = new Set<string>(); // this run's failing or unknown events: not picked again
    let handled = 0;
    let after: string | null = null;
    for (;;) {
      const workspaces = await this.outbox.unhandledDeadLetterWorkspaces(after, 100);
      if (!workspaces.length) return handled;
      for (const workspaceId of workspaces) {
        for (;;) {
          if (this.stopped) return handled;
          const outcome = await this.reactToNext(workspaceId, skipped);
          if (outcome === 'skipped') continue; // that event waits; the workspace's next one
          if (outcome !== 'handled') break;
          handled++;
        }
      }
      after = workspaces[workspaces.length - 1]!;
    }
  }

  /**
   * 'skipped': that event's reaction threw, or its job is unknown to this process (a newer
   * version's job during a rolling deploy: left for a worker that knows it); excluded for the rest
   * of this run. 'unavailable': the transaction failed before an event was read.
   */
  private async reactToNext(
    workspaceId: string,
    skipped: Set<string>,
  ): Promise<'handled' | 'none' | 'skipped' | 'unavailable'> {
    let eventId: string | undefined;
    try {
      return await this.options.db.withWorkspace(
        workspaceId,
        async () => {
          const dead = await this.outbox.nextUnhandledDeadLetter([...skipped]);
          if (!dead) return 'none';
          eventId = dead.id;
          const definition = this.options.registry.job(dead.type);
          if (!definition) {
            skipped.add(dead.id);
            return 'skipped';
          }
          const reaction = this.options.registry.deadLetterReaction(dead.type);
          if (reaction) {
            const parsed = definition.schema.safeParse(dead.payload);
            if (!parsed.success) {
              // Written by a version whose schema this one does not read: left for a worker that
              // can (recorded as handled, its operation would stay open for good). Loud: a deploy
              // changed a payload incompatibly.
              this.logger.error('dead letter with a payload this version cannot read: left unhandled', {
                event: dead.id,
                type: dead.type,
              });
              skipped.add(dead.id);
              return 'skipped';
            }
            await reaction(parsed.data, { eventId: dead.id, workspaceId });
          }
          await this.outbox.markDeadLetterHandled(dead.id);
          return 'handled';
        },
        // A reaction waiting on a row that a long handler holds must not stall all the others.
        { lockTimeoutMs: REACTION_LOCK_TIMEOUT_MS },
      );
    } catch (error) {
      if (eventId) skipped.add(eventId);
      this.logger.error('dead-letter reaction failed; tried again on the next run', {
        workspace: workspaceId,
        event: eventId,
        error: redactError(error),
      });
      return eventId ? 'skipped' : 'unavailable';
    }
  }
}
