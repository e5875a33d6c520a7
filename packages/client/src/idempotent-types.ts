import type { FetchResponse, MaybeOptionalInit } from 'openapi-fetch';
import type { AttemptReport, IdempotentMeta } from './call-idempotently';
import type { RetryOptions } from './retry-options';
import type { paths } from './schema';

/** The methods of routes that can take an Idempotency-Key. */
export type IdempotentHttpMethod = 'post' | 'put' | 'patch' | 'delete';

/** The 4th argument of `idempotent()`: its retry bounds, plus the key and an observer. */
export interface IdempotentOptions extends RetryOptions {
  /**
   * The key every attempt sends. Default: a new UUID v4 per call. Pass your own when it must
   * outlive this process (stored before the first send, to resume after a crash or a
   * RetriesExhaustedError).
   */
  key?: string;
  /** Called after every attempt (logging, metrics); must not throw. */
  onAttempt?: (report: AttemptReport) => void;
}

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

/** A header parameter object without Idempotency-Key (`idempotent()` sets it). */
type KeylessHeader<H> = [H] extends [never] ? never : Omit<H, 'Idempotency-Key'>;

type KeylessParameters<P extends { header?: unknown }> = Omit<P, 'header'> &
  (RequiredKeys<KeylessHeader<NonNullable<P['header']>>> extends never
    ? { header?: KeylessHeader<NonNullable<P['header']>> }
    : { header: KeylessHeader<NonNullable<P['header']>> });

type Keyless<Op> = Op extends { parameters: infer P extends { header?: unknown } }
  ? Omit<Op, 'parameters'> & { parameters: KeylessParameters<P> }
  : Op;

/** The API's paths as `idempotent()` takes them: Idempotency-Key is not the caller's to send. */
export type KeylessPaths = {
  [Path in keyof paths]: {
    [M in keyof paths[Path]]: M extends IdempotentHttpMethod ? Keyless<paths[Path][M]> : paths[Path][M];
  };
};

type TakesKey<Op> = Op extends { parameters: { header?: infer H } }
  ? [NonNullable<H>] extends [never] // `header?: never`: no header parameter at all
    ? false
    : 'Idempotency-Key' extends keyof NonNullable<H>
      ? true
      : false
  : false;

/** The paths whose `method` route declares Idempotency-Key (required or optional). */
export type IdempotentPath<Method extends IdempotentHttpMethod> = {
  [Path in keyof paths]: paths[Path] extends { [K in Method]: infer Op }
    ? TakesKey<Op> extends true
      ? Path
      : never
    : never;
}[keyof paths];

type Media = `${string}/${string}`;

/**
 * `client.idempotent(method, path, init, options?)`: openapi-fetch's `client.request` for a route
 * that takes an Idempotency-Key, sent under one key until its answer is definitive (README).
 */
export type IdempotentRequest = <
  Method extends IdempotentHttpMethod,
  // `& string`: keeps the literal path inferred (a bare generic constraint would widen it).
  Path extends IdempotentPath<Method> & string,
  Init extends MaybeOptionalInit<KeylessPaths[Path], Method>,
>(
  method: Method,
  path: Path,
  init: Init,
  options?: IdempotentOptions,
) => Promise<
  FetchResponse<KeylessPaths[Path][Method] & Record<string | number, unknown>, Init, Media> & IdempotentMeta
>;
