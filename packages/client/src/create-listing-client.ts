import createClient, { type Client } from 'openapi-fetch';
import { bearerAuth, type TokenSource } from './bearer-auth';
import { idempotentRequest } from './idempotent-request';
import type { IdempotentRequest } from './idempotent-types';
import type { RetryOptions } from './retry-options';
import type { paths } from './schema';

export interface ListingClientOptions {
  /** The API's origin, e.g. `http://127.0.0.1:3000` (paths start with `/v1`). */
  baseUrl: string;
  /** A fixed access token, sent as `Authorization: Bearer …`. */
  token?: string;
  /** Asked before every request instead (a token that changes: login, refresh); not with `token`. */
  getToken?: TokenSource;
  /** Default: the global fetch. */
  fetch?: (request: Request) => Promise<Response>;
  /** Defaults of every `idempotent()` call (each call may override them). */
  retry?: RetryOptions;
}

/** openapi-fetch's client of the API's paths (`GET`, `POST`, … `request`) plus `idempotent`. */
export type ListingClient = Client<paths> & { readonly idempotent: IdempotentRequest };

export function createListingClient(options: ListingClientOptions): ListingClient {
  if (options.token !== undefined && options.getToken) {
    throw new TypeError('createListingClient: pass either token or getToken, not both');
  }
  const fetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<paths>({ baseUrl: options.baseUrl, fetch });
  const token = options.getToken ?? (options.token !== undefined ? () => options.token : undefined);
  if (token) client.use(bearerAuth(token));
  return Object.assign(client, { idempotent: idempotentRequest(client, fetch, options.retry) });
}
