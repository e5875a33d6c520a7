import type { JobDefinition } from './job-definition';

const HANDLERS = Symbol.for('listing.outbox.handlers');

export interface DecoratedHandler {
  readonly job: JobDefinition;
  readonly method: string | symbol;
}

/**
 * Marks a method as the handler of a job: `@OutboxHandler(sendMail) async send(payload, ctx) {}`.
 * Plain metadata on the class (no Nest needed); JobRegistry.registerHandlers(instance) binds them.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function OutboxHandler<P extends Record<string, unknown>>(job: JobDefinition<P>): any {
  return (target: object, method: string | symbol) => {
    const own = Object.prototype.hasOwnProperty.call(target, HANDLERS)
      ? (target as Record<symbol, DecoratedHandler[]>)[HANDLERS]!
      : [];
    if (!Object.prototype.hasOwnProperty.call(target, HANDLERS)) {
      Object.defineProperty(target, HANDLERS, { value: own, enumerable: false });
    }
    own.push({ job: job as unknown as JobDefinition, method });
  };
}

/** The decorated handlers of an instance, from its whole prototype chain. */
export function decoratedHandlers(instance: object): DecoratedHandler[] {
  const found: DecoratedHandler[] = [];
  for (
    let proto = Object.getPrototypeOf(instance);
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    if (Object.prototype.hasOwnProperty.call(proto, HANDLERS))
      found.push(...(proto[HANDLERS] as DecoratedHandler[]));
  }
  return found;
}
