/** One request a client sent, as the network saw it. */
export interface SentRequest {
  method: string;
  path: string;
  key: string | null;
  sentAt: number;
  /** When the answer's headers arrived; undefined when there was none (network error). */
  answeredAt?: number;
  status?: number;
  retryAfter?: string | null;
}

/** The global fetch, recording each request's Idempotency-Key, timing and status. */
export function recordingFetch(): { fetch: (request: Request) => Promise<Response>; sent: SentRequest[] } {
  const sent: SentRequest[] = [];
  const fetch = async (request: Request) => {
    const entry: SentRequest = {
      method: request.method,
      path: new URL(request.url).pathname,
      key: request.headers.get('idempotency-key'),
      sentAt: Date.now(),
    };
    sent.push(entry);
    const response = await globalThis.fetch(request);
    Object.assign(entry, {
      answeredAt: Date.now(),
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
    });
    return response;
  };
  return { fetch, sent };
}
