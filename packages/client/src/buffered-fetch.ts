import { NetworkError } from './errors';

type Fetch = (request: Request) => Promise<Response>;

const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * `fetch` that reads the whole body before it answers, so that every way of getting no answer
 * (refused, reset, timed out, a body cut off halfway) fails here, as a NetworkError, and
 * nothing else does. For JSON commands only: it buffers.
 */
export function bufferedFetch(fetch: Fetch): Fetch {
  return async (request) => {
    let response: Response;
    let body: ArrayBuffer;
    try {
      response = await fetch(request);
      body = await response.arrayBuffer();
    } catch (error) {
      throw new NetworkError(error);
    }
    return new Response(NULL_BODY_STATUSES.has(response.status) ? null : body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
