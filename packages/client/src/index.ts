export { createListingClient, type ListingClient, type ListingClientOptions } from './create-listing-client';
export type {
  IdempotentHttpMethod,
  IdempotentOptions,
  IdempotentPath,
  IdempotentRequest,
} from './idempotent-types';
export type { AttemptReport, IdempotentMeta } from './call-idempotently';
export { DEFAULT_RETRY_OPTIONS, type RetryOptions } from './retry-options';
export { NetworkError, RetriesExhaustedError } from './errors';
export type { Problem, ProblemCode } from './problem';
export type { components, operations, paths } from './schema';
