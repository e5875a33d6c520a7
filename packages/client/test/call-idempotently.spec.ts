import type { AttemptReport, Answer } from '../src/call-idempotently';
import { callIdempotently } from '../src/call-idempotently';
import type { Clock } from '../src/clock';
import { NetworkError, RetriesExhaustedError } from '../src/errors';
import { resolveRetryOptions, type RetryOptions } from '../src/retry-options';

/** A clock whose sleeps only move `now` (and record the wait). */
function fakeClock(random = 0.5): Clock & { waits: number[]; t: number } {
  const clock = {
    t: 0,
    waits: [] as number[],
    now: () => clock.t,
    random: () => random,
    sleep: async (ms: number) => {
      clock.waits.push(ms);
      clock.t += ms;
    },
  };
  return clock;
}

function answer(status: number, body?: unknown, headers: Record<string, string> = {}): Answer {
  const response = new Response(body === undefined ? null : JSON.stringify(body), { status, headers });
  return status < 400 ? { response, data: body } : { response, error: body };
}

const inProgress = () =>
  answer(409, { code: 'IDEMPOTENCY_REQUEST_IN_PROGRESS', status: 409 }, { 'retry-after': '2' });
const unavailable = () => answer(503, { code: 'SERVICE_UNAVAILABLE', status: 503 }, { 'retry-after': '1' });
const networkError = () => new NetworkError(new TypeError('fetch failed'));

/** Answers (or throws) the scripted outcomes in order. */
function script(...outcomes: Array<Answer | Error>) {
  const send = jest.fn(async () => {
    const next = outcomes.shift();
    if (!next) throw new Error('script exhausted');
    if (next instanceof Error) throw next;
    return next;
  });
  return send;
}

function run(
  send: (signal: AbortSignal) => Promise<Answer>,
  retry: RetryOptions = {},
  clock = fakeClock(),
  signal?: AbortSignal,
) {
  const reports: AttemptReport[] = [];
  const result = callIdempotently(
    send,
    {
      request: 'POST /v1/things',
      key: 'k-1',
      retry: resolveRetryOptions(retry),
      signal,
      onAttempt: (r) => reports.push(r),
    },
    clock,
  );
  return { result, reports, clock };
}

describe('callIdempotently', () => {
  it('retries a network error, a 503 and a 409 IN_PROGRESS, then returns the definitive answer', async () => {
    const send = script(
      networkError(),
      unavailable(),
      inProgress(),
      answer(201, { id: 'x' }, { 'idempotent-replayed': 'true' }),
    );
    const { result, reports, clock } = run(send, { baseDelayMs: 100 });
    const done = await result;
    expect(done).toMatchObject({ key: 'k-1', attempts: 4, status: 201, replayed: true, data: { id: 'x' } });
    expect(send).toHaveBeenCalledTimes(4);
    // no Retry-After after the network error: backoff (random 0.5 · 100); then the servers' 1 s and 2 s
    expect(clock.waits).toEqual([50, 1000, 2000]);
    expect(reports.map((r) => [r.attempt, r.status, r.code, r.retryInMs])).toEqual([
      [1, undefined, undefined, 50],
      [2, 503, 'SERVICE_UNAVAILABLE', 1000],
      [3, 409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS', 2000],
      [4, 201, undefined, undefined],
    ]);
    expect(reports[0]!.error).toBeInstanceOf(NetworkError);
  });

  it.each([
    [400, 'IDEMPOTENCY_KEY_INVALID'],
    [404, 'RESOURCE_NOT_FOUND'],
    [409, 'IDEMPOTENCY_KEY_REUSED'],
    [409, 'IDEMPOTENCY_SCOPE_CONFLICT'],
    [422, 'VALIDATION_FAILED'],
    [429, 'RATE_LIMITED'],
    [500, 'INTERNAL_ERROR'],
  ])('never retries %i %s', async (status, code) => {
    const send = script(answer(status, { code, status }, { 'retry-after': '1' }), answer(201, {}));
    const done = await run(send).result;
    expect(done).toMatchObject({ attempts: 1, status, replayed: false, error: { code } });
    expect(send).toHaveBeenCalledTimes(1);
  });

  it('backoff grows (full jitter, capped) while no Retry-After is sent', async () => {
    const send = script(networkError(), networkError(), networkError(), networkError(), answer(200, {}));
    const { result, clock } = run(send, { baseDelayMs: 100, maxDelayMs: 300 }, fakeClock(0.99));
    await result;
    expect(clock.waits).toEqual([99, 198, 297, 297]);
  });

  it('gives up after maxAttempts with the outcome unknown, naming the key', async () => {
    const send = script(unavailable(), unavailable(), unavailable(), answer(201, {}));
    const { result } = run(send, { maxAttempts: 3 });
    const error = (await result.catch((e: unknown) => e)) as RetriesExhaustedError;
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect(error).toMatchObject({
      key: 'k-1',
      attempts: 3,
      lastStatus: 503,
      cause: { code: 'SERVICE_UNAVAILABLE' },
    });
    expect(error.message).toMatch(
      /POST \/v1\/things: outcome unknown after 3 attempt\(s\).*503 SERVICE_UNAVAILABLE.*k-1/,
    );
    expect(send).toHaveBeenCalledTimes(3);
  });

  it('gives up rather than wait past maxElapsedMs (a Retry-After longer than what is left)', async () => {
    const send = script(inProgress(), inProgress(), answer(201, {}));
    const { result, clock } = run(send, { maxElapsedMs: 3000 });
    const error = (await result.catch((e: unknown) => e)) as RetriesExhaustedError;
    expect(error).toMatchObject({ name: 'RetriesExhaustedError', attempts: 2, elapsedMs: 2000 });
    expect(clock.waits).toEqual([2000]);
  });

  it('a last attempt without an answer: lastStatus undefined, the network error as cause', async () => {
    const { result } = run(script(networkError(), networkError()), { maxAttempts: 2 });
    const error = (await result.catch((e: unknown) => e)) as RetriesExhaustedError;
    expect(error.lastStatus).toBeUndefined();
    expect(error.cause).toBeInstanceOf(NetworkError);
    expect(error.message).toMatch(/last: no answer: fetch failed/);
  });

  it('rethrows any other exception at once (a bug, not a transient condition)', async () => {
    const send = script(new SyntaxError('Unexpected token'), answer(201, {}));
    await expect(run(send).result).rejects.toThrow(SyntaxError);
    expect(send).toHaveBeenCalledTimes(1);
  });

  it("the caller's abort ends the call, also while it waits", async () => {
    const controller = new AbortController();
    const clock = fakeClock();
    clock.sleep = (_ms, signal) =>
      new Promise((_resolve, reject) => signal!.addEventListener('abort', () => reject(signal!.reason)));
    const send = script(unavailable(), answer(201, {}));
    const { result } = run(send, {}, clock, controller.signal);
    await new Promise((r) => setImmediate(r));
    controller.abort(new Error('caller gave up'));
    await expect(result).rejects.toThrow('caller gave up');
    expect(send).toHaveBeenCalledTimes(1);
  });

  it('hands each attempt a signal that times out after attemptTimeoutMs', async () => {
    const signals: AbortSignal[] = [];
    const send = jest.fn(async (signal: AbortSignal) => {
      signals.push(signal);
      await new Promise((r) => signal.addEventListener('abort', r));
      throw new NetworkError(signal.reason);
    });
    const started = Date.now();
    const { result } = run(send, { attemptTimeoutMs: 50, maxAttempts: 2 });
    const error = (await result.catch((e: unknown) => e)) as RetriesExhaustedError;
    expect(error.attempts).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(signals.every((s) => (s.reason as Error).name === 'TimeoutError')).toBe(true);
  });
});
