import type { Middleware } from 'openapi-fetch';

export type TokenSource = () => string | undefined | Promise<string | undefined>;

/** openapi-fetch middleware: `Authorization: Bearer <token>` on every request that has none. */
export function bearerAuth(token: TokenSource): Middleware {
  return {
    async onRequest({ request }) {
      const value = await token();
      if (value && !request.headers.has('authorization'))
        request.headers.set('authorization', `Bearer ${value}`);
      return request;
    },
  };
}
