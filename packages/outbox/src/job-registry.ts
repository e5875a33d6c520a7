import type { DeadLetterReaction, JobDefinition, JobHandler } from './job-definition';
import { OutboxError } from './outbox-error';
import { decoratedDeadLetterReactions, decoratedHandlers } from './outbox-handler.decorator';

/**
 * Job names → queue, schema and handler. The worker process builds one at boot and calls
 * assertComplete() before consuming anything: every defined job has exactly one handler and no
 * handler belongs to an undefined job.
 */
export class JobRegistry {
  private readonly jobs = new Map<string, JobDefinition>();
  private readonly handlers = new Map<string, JobHandler[]>();
  private readonly reactions = new Map<string, DeadLetterReaction>();

  define(...jobs: JobDefinition[]): this {
    for (const job of jobs) {
      const known = this.jobs.get(job.name);
      if (known && known !== job && (known.queue !== job.queue || known.scope !== job.scope)) {
        throw new OutboxError(
          'OUTBOX_JOB_CONFLICT',
          `job ${job.name} is defined twice with different queues`,
        );
      }
      if (!known) this.jobs.set(job.name, job);
    }
    return this;
  }

  /** Registers `handler` for `job` (defining the job when needed). */
  handle<P extends Record<string, unknown>>(job: JobDefinition<P>, handler: JobHandler<P>): this {
    this.define(job as unknown as JobDefinition);
    const list = this.handlers.get(job.name) ?? [];
    list.push(handler as JobHandler);
    this.handlers.set(job.name, list);
    return this;
  }

  /** Registers the reaction to a dead letter of `job` (at most one per job). */
  onDeadLetter<P extends Record<string, unknown>>(
    job: JobDefinition<P>,
    reaction: DeadLetterReaction<P>,
  ): this {
    this.define(job as unknown as JobDefinition);
    if (this.reactions.has(job.name)) {
      throw new OutboxError('OUTBOX_HANDLER_DUPLICATE', `job ${job.name} has two dead-letter reactions`, {
        duplicated: [job.name],
      });
    }
    this.reactions.set(job.name, reaction as DeadLetterReaction);
    return this;
  }

  /** Registers every @OutboxHandler and @OnOutboxDeadLetter method of an instance, bound to it. */
  registerHandlers(instance: object): this {
    const bound = (method: string | symbol) => {
      const fn = (instance as Record<string | symbol, unknown>)[method];
      return typeof fn === 'function' ? (fn as (...args: unknown[]) => Promise<never>).bind(instance) : null;
    };
    for (const { job, method } of decoratedHandlers(instance)) {
      const fn = bound(method);
      if (fn) this.handle(job, fn);
    }
    for (const { job, method } of decoratedDeadLetterReactions(instance)) {
      const fn = bound(method);
      if (fn) this.onDeadLetter(job, fn);
    }
    return this;
  }

  deadLetterReaction(name: string): DeadLetterReaction | undefined {
    return this.reactions.get(name);
  }

  /** Throws one error listing every job without exactly one handler. */
  assertComplete(): void {
    const missing = [...this.jobs.keys()].filter((name) => !this.handlers.get(name)?.length);
    const duplicated = [...this.handlers.entries()].filter(([, list]) => list.length > 1).map(([n]) => n);
    if (duplicated.length) {
      throw new OutboxError(
        'OUTBOX_HANDLER_DUPLICATE',
        `jobs with more than one handler: ${duplicated.join(', ')}`,
        {
          duplicated,
        },
      );
    }
    if (missing.length) {
      throw new OutboxError('OUTBOX_HANDLER_MISSING', `jobs without a handler: ${missing.join(', ')}`, {
        missing,
      });
    }
  }

  job(name: string): JobDefinition | undefined {
    return this.jobs.get(name);
  }

  handler(name: string): JobHandler | undefined {
    const list = this.handlers.get(name);
    return list?.length === 1 ? list[0] : undefined;
  }

  queues(): string[] {
    return [...new Set([...this.jobs.values()].map((j) => j.queue))].sort();
  }

  definitions(): JobDefinition[] {
    return [...this.jobs.values()];
  }
}
