import type { JobDefinition } from './job-definition';

const HANDLERS = Symbol.for('listing.outbox.handlers');
const DEAD_LETTER_REACTIONS = Symbol.for('listing.outbox.dead-letter-reactions');

export interface DecoratedHandler {
  readonly job: JobDefinition;
  readonly method: string | symbol;
}

/** Records `job` → `method` under `key` on the class prototype (plain metadata, no Nest needed). */
function decorate(key: symbol, job: JobDefinition) {
  return (target: object, method: string | symbol) => {
    if (!Object.prototype.hasOwnProperty.call(target, key)) {
      Object.defineProperty(target, key, { value: [], enumerable: false });
    }
    (target as Record<symbol, DecoratedHandler[]>)[key]!.push({ job, method });
  };
}

/** The methods decorated under `key` on an instance's whole prototype chain. */
function decorated(key: symbol, instance: object): DecoratedHandler[] {
  const found: DecoratedHandler[] = [];
  for (
    let proto = Object.getPrototypeOf(instance);
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    if (Object.prototype.hasOwnProperty.call(proto, key)) found.push(...(proto[key] as DecoratedHandler[]));
  }
  return found;
}

/**
 * Marks a method as the handler of a job: `@OutboxHandler(sendMail) async send(payload, ctx) {}`.
 * JobRegistry.registerHandlers(instance) binds them.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function OutboxHandler<P extends Record<string, unknown>>(job: JobDefinition<P>): any {
  return decorate(HANDLERS, job as unknown as JobDefinition);
}

/**
 * Marks a method as what a dead letter of the job means for the domain:
 * `@OnOutboxDeadLetter(publish) async gaveUp(payload, ctx) {}` — typically fail the operation the
 * event carried and settle its resource. Runs once per dead letter (DeadLetterReactor), in a
 * transaction bound to the event's workspace; it must only write conditionally (the state may have
 * moved on), and must not call out.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function OnOutboxDeadLetter<P extends Record<string, unknown>>(job: JobDefinition<P>): any {
  return decorate(DEAD_LETTER_REACTIONS, job as unknown as JobDefinition);
}

export const decoratedHandlers = (instance: object) => decorated(HANDLERS, instance);
export const decoratedDeadLetterReactions = (instance: object) => decorated(DEAD_LETTER_REACTIONS, instance);

const DECLARED_JOBS = Symbol.for('listing.outbox.declared-jobs');

/**
 * Declares the jobs a module owns, on the module class: `@DeclareJobs(publish) @Module({...})`.
 * The worker checks at start that each declared job has exactly one handler and a worker that
 * serves its queue; a handler of a job no module declares is refused too.
 */
export function DeclareJobs(...jobs: JobDefinition[]): ClassDecorator {
  return (target) => {
    Object.defineProperty(target, DECLARED_JOBS, { value: Object.freeze([...jobs]), enumerable: false });
  };
}

/** The jobs a class declared with @DeclareJobs (its own, not inherited). */
export function declaredJobsOf(target: object): readonly JobDefinition[] {
  return Object.prototype.hasOwnProperty.call(target, DECLARED_JOBS)
    ? ((target as Record<symbol, JobDefinition[]>)[DECLARED_JOBS] ?? [])
    : [];
}
