import { mergeHeaders, type Client, type HeadersOptions } from 'openapi-fetch';
import { bufferedFetch } from './buffered-fetch';
import { callIdempotently, type Answer } from './call-idempotently';
import type { IdempotentOptions, IdempotentRequest } from './idempotent-types';
import { resolveRetryOptions, type RetryOptions } from './retry-options';
import type { paths } from './schema';

type Send = (
  method: string,
  path: string,
  init: { headers?: HeadersOptions; signal?: AbortSignal | null; fetch?: (r: Request) => Promise<Response> },
) => Promise<Answer>;

/**
 * `client.idempotent`: one UUID v4 Idempotency-Key per logical call (or `options.key`), kept on
 * every attempt; each attempt is `client.request` (its middleware, e.g. the bearer token, runs
 * each time) through a buffering fetch, so a network error is told apart from an answer.
 */
export function idempotentRequest(
  client: Client<paths>,
  fetch: (request: Request) => Promise<Response>,
  defaults?: RetryOptions,
): IdempotentRequest {
  const send = client.request as unknown as Send;
  const transport = bufferedFetch(fetch);
  const idempotent = async (
    method: string,
    path: string,
    init: Parameters<Send>[2] = {},
    options: IdempotentOptions = {},
  ) => {
    const { key = globalThis.crypto.randomUUID(), onAttempt, ...retry } = options;
    const signal = init.signal ?? undefined;
    return callIdempotently(
      (attemptSignal) =>
        send(method, path, {
          ...init,
          headers: mergeHeaders(init.headers, { 'Idempotency-Key': key }),
          signal: attemptSignal,
          fetch: transport,
        }),
      {
        request: `${method.toUpperCase()} ${path}`,
        key,
        retry: resolveRetryOptions(defaults, retry),
        signal,
        onAttempt,
      },
    );
  };
  return idempotent as unknown as IdempotentRequest;
}
