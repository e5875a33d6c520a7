import type { Database } from '@listing/db';
import type { JobContext } from './job-definition';

/** A failure written for clients: a stable code and our own message, never provider text. */
export interface StepFailure {
  readonly code: string;
  readonly message: string;
}

/**
 * Operation failure codes with the message clients read. `defineFailures({ CODE: 'message' })`
 * gives `{ CODE: { code: 'CODE', message } }`: a code without its message does not compile, and
 * the catalogue is what the documentation lists.
 */
export function defineFailures<const T extends Record<string, string>>(
  messages: T,
): { readonly [K in keyof T & string]: { readonly code: K; readonly message: T[K] } } {
  return Object.freeze(
    Object.fromEntries(Object.entries(messages).map(([code, message]) => [code, { code, message }])),
  ) as never;
}

/**
 * A catalogued failure with a message of the moment (what exactly was wrong with the image):
 * `failureOf(MEDIA_FAILURES, error.code, error.message)` only compiles for a code in the catalogue.
 */
export function failureOf<C extends Record<string, StepFailure>>(
  catalogue: C,
  code: keyof C & string,
  message: string,
): StepFailure {
  return { code: catalogue[code]!.code, message };
}

/**
 * The failure codes of several catalogues as one table, code → message (the first catalogue that
 * names a code documents it), for the documentation of what an operation can end with.
 */
export function mergeFailures(
  ...catalogues: ReadonlyArray<Readonly<Record<string, StepFailure>>>
): Readonly<Record<string, string>> {
  const merged: Record<string, string> = {};
  for (const catalogue of catalogues) {
    for (const { code, message } of Object.values(catalogue)) merged[code] ??= message;
  }
  return Object.freeze(merged);
}

/** A verdict reached inside a step (the resource is gone, the store is no longer active). */
export class PermanentStepError extends Error {
  constructor(readonly failure: StepFailure) {
    super(failure.code);
    this.name = 'PermanentStepError';
  }
}

/** What a job returns (BullMQ keeps it as the job's return value): at least what happened. */
export interface StepOutcome {
  readonly outcome: string;
}

/** What claim() returns when there is nothing to call: the resource is settled or moved on. */
export class StepSkip<Outcome extends StepOutcome> {
  constructor(readonly outcome: Outcome) {}
}

export const skip = <Outcome extends StepOutcome>(outcome: Outcome) => new StepSkip(outcome);

/** The outcome of a delivery whose settlement another delivery of the same event committed first. */
export const SETTLED_ELSEWHERE = Object.freeze({
  outcome: 'skipped',
  status: 'settled by another delivery',
} as const);

/** What fail() gets to decide the terminal state: how far this delivery got. */
export interface StepFailureContext<Plan> {
  readonly failure: StepFailure;
  /** The claim's plan when the claim committed; the provider was called (or about to be). */
  readonly plan: Plan | undefined;
  readonly error: unknown;
}

/**
 * One remote step of a job: load and claim the resource, call the provider outside any
 * transaction, settle. The runner owns the order, the transactions and the classification, so a
 * handler only writes what is particular to its capability.
 */
export interface RemoteStep<P, Plan, Result, Outcome extends StepOutcome> {
  /**
   * In a transaction bound to the event's workspace: load the resource, finish what an earlier
   * delivery already decided, claim it for this attempt with a conditional transition. Returns
   * the plan for call(), or skip(outcome) when there is nothing to call.
   */
  claim(payload: P, context: JobContext): Promise<Plan | StepSkip<Outcome>>;
  /** No transaction: the provider call, with the provider key derived from the resource. */
  call(plan: Plan, context: JobContext): Promise<Result>;
  /** In a transaction bound to the workspace: the conditional success transition. */
  settle(plan: Plan, result: Result, payload: P, context: JobContext): Promise<Outcome>;
  /**
   * Which errors are verdicts (a failure to record now, whatever attempts are left); undefined
   * for transient ones. PermanentStepError is a verdict without asking.
   */
  permanent?(error: unknown): StepFailure | undefined;
  /** The failure once the attempts are used up on transient errors. */
  exhausted(error: unknown): StepFailure;
  /** In a transaction bound to the workspace: the conditional failure transition. */
  fail(payload: P, failed: StepFailureContext<Plan>, context: JobContext): Promise<Outcome>;
  /**
   * 'call' (default 'any'): only the call's errors (and verdicts thrown anywhere) end in fail();
   * an unexpected error of claim or settle is left to the outbox, which retries it and, once the
   * attempts are used up, dead-letters the event (visible to operators; the dead-letter reaction
   * settles the resource).
   */
  readonly failsOn?: 'any' | 'call';
}

/** Refused: the remote step must not run inside a transaction (the job needs `transaction: false`). */
export class RemoteStepInTransactionError extends Error {
  constructor(job: string) {
    super(`job ${job} runs a remote step inside a transaction: define it with transaction: false`);
    this.name = 'RemoteStepInTransactionError';
  }
}

/**
 * Runs a remote step: claim (short transaction) → call (no transaction) → settle (short
 * transaction). A verdict, or a transient error on the last attempt, goes to fail() in a short
 * transaction; a transient error before that is rethrown for BullMQ to retry. settle() and
 * fail() each record the event in the inbox (keys `<job>:settle`, `<job>:fail`) in their
 * transaction: of two deliveries of one event running at once (a stalled job redelivered while
 * the first still runs), only the first to commit settles, and only the first to commit fails.
 * A success after a failure still settles: the step's conditional transitions decide whether it
 * may (a publication left outcome_unknown becomes published when the product id arrives).
 */
export async function runRemoteStep<P, Plan, Result, Outcome extends StepOutcome>(
  db: Database,
  step: RemoteStep<P, Plan, Result, Outcome>,
  payload: P,
  context: JobContext,
): Promise<Outcome | typeof SETTLED_ELSEWHERE> {
  // Joined to an ambient transaction, the call would hold it (and its locks) open.
  if (db.isInTransaction() || !context.workspaceId) throw new RemoteStepInTransactionError(context.job.name);
  const inWorkspace = <T>(fn: () => Promise<T>) => db.withWorkspace(context.workspaceId!, fn);
  const once = (key: 'settle' | 'fail', fn: () => Promise<Outcome>) =>
    inWorkspace(async () =>
      (await context.inboxOnce(`${context.job.name}:${key}`)) ? fn() : SETTLED_ELSEWHERE,
    );
  let plan: Plan | undefined;
  let calling = false;
  try {
    const claimed = await inWorkspace(() => step.claim(payload, context));
    if (claimed instanceof StepSkip) return claimed.outcome;
    plan = claimed;
    calling = true;
    const result = await step.call(claimed, context);
    calling = false;
    return await once('settle', () => step.settle(claimed, result, payload, context));
  } catch (error) {
    const verdict = error instanceof PermanentStepError ? error.failure : step.permanent?.(error);
    if (!verdict && (!isLastAttempt(context) || (step.failsOn === 'call' && !calling))) throw error;
    const failure = verdict ?? step.exhausted(error);
    return once('fail', () => step.fail(payload, { failure, plan, error }, context));
  }
}

/** True on the last delivery attempt BullMQ will make of this job. */
export function isLastAttempt(context: JobContext): boolean {
  return context.attempt >= (context.job.opts.attempts ?? 1);
}
