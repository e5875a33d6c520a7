import { backoffDelay } from './backoff-delay';
import { systemClock, type Clock } from './clock';
import { NetworkError, RetriesExhaustedError } from './errors';
import { problemCode } from './problem';
import { retryAfterMs } from './retry-after';
import type { ResolvedRetryOptions } from './retry-options';
import { isTransientAnswer } from './transient-answer';

/** What one send answered: openapi-fetch's result (`data` or `error`, and the response). */
export interface Answer {
  response: Response;
  data?: unknown;
  error?: unknown;
}

/** One attempt, as `onAttempt` hears of it (logging, metrics). */
export interface AttemptReport {
  /** 1 for the first send. */
  attempt: number;
  key: string;
  /** The answer's status; `undefined` when there was none (`error` says why). */
  status?: number;
  /** The problem `code` of an error answer. */
  code?: string;
  /** The network error (a NetworkError) when there was no answer. */
  error?: NetworkError;
  /** The wait before the next attempt; `undefined` when this attempt ends the call. */
  retryInMs?: number;
}

/** What `idempotent()` adds to openapi-fetch's result. */
export interface IdempotentMeta {
  /** The Idempotency-Key every attempt of this call carried. */
  key: string;
  /** Sends it took, the first included. */
  attempts: number;
  /** `Idempotent-Replayed: true`: this is the first result of the key, run earlier. */
  replayed: boolean;
  status: number;
}

export interface CallSettings {
  /** `POST /v1/…` (the schema path), for error messages. */
  request: string;
  key: string;
  retry: ResolvedRetryOptions;
  /** The caller's: aborting it ends the call at once (its reason is thrown), never retried. */
  signal?: AbortSignal;
  onAttempt?: (report: AttemptReport) => void;
}

/**
 * Sends one logical request until its answer is definitive: `send` is called with the same key
 * baked in (the caller's closure), again after a NetworkError, a 503 or a 409
 * IDEMPOTENCY_REQUEST_IN_PROGRESS, waiting the answer's Retry-After, else a full-jitter backoff.
 * Any other answer is returned as it is (never retried); any other exception is rethrown. Gives
 * up with RetriesExhaustedError when the attempts or the time (settings.retry) run out.
 */
export async function callIdempotently<A extends Answer>(
  send: (signal: AbortSignal) => Promise<A>,
  settings: CallSettings,
  clock: Clock = systemClock,
): Promise<A & IdempotentMeta> {
  const { key, retry, signal } = settings;
  const started = clock.now();
  const deadline = started + retry.maxElapsedMs;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    let answer: A | undefined;
    let failure: NetworkError | undefined;
    try {
      answer = await send(attemptSignal(signal, Math.min(retry.attemptTimeoutMs, deadline - clock.now())));
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (!(error instanceof NetworkError)) throw error;
      failure = error;
    }
    const status = answer?.response.status;
    const code = problemCode(answer?.error);
    if (answer && !isTransientAnswer(answer.response.status, answer.error)) {
      settings.onAttempt?.({ attempt, key, status, code });
      const replayed = answer.response.headers.get('idempotent-replayed') === 'true';
      return Object.assign(answer, { key, attempts: attempt, replayed, status: answer.response.status });
    }
    const wait =
      retryAfterMs(answer?.response.headers.get('retry-after')) ??
      backoffDelay(attempt - 1, retry, () => clock.random());
    const givingUp = attempt >= retry.maxAttempts || clock.now() + wait >= deadline;
    settings.onAttempt?.({
      attempt,
      key,
      status,
      code,
      error: failure,
      retryInMs: givingUp ? undefined : wait,
    });
    if (givingUp) {
      const elapsed = clock.now() - started;
      throw new RetriesExhaustedError(
        settings.request,
        key,
        attempt,
        elapsed,
        status,
        failure ?? answer?.error,
      );
    }
    await clock.sleep(wait, signal);
  }
}

/** The caller's signal, plus this attempt's own timeout. */
function attemptSignal(caller: AbortSignal | undefined, timeoutMs: number): AbortSignal {
  const timeout = AbortSignal.timeout(Math.max(1, Math.floor(timeoutMs)));
  return caller ? AbortSignal.any([caller, timeout]) : timeout;
}
