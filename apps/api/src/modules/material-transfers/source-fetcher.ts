import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import {
  checkSourceUrl,
  isExplicitIpEntry,
  isNonPublicAddress,
  SourceRejectedError,
  type AllowEntry,
} from './source-url-guard';

export interface FetchOptions {
  allowlist: readonly AllowEntry[];
  maxRedirects: number;
  maxBytes: number;
  /** Deadline for the whole fetch, every hop included. */
  timeoutMs: number;
}

export interface FetchedSource {
  body: Buffer;
  /** The Content-Type the source declared, if any. */
  contentType: string | null;
}

/** A failed fetch. `permanent` failures finish the transfer; the others are retried. */
export class SourceFetchError extends Error {
  constructor(
    readonly code: 'SOURCE_NOT_ALLOWED' | 'MEDIA_TOO_LARGE' | 'SOURCE_UNAVAILABLE' | 'SOURCE_TIMEOUT',
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = 'SourceFetchError';
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Fetches a source image without ever reaching an address the policy forbids. Redirects are
 * followed by hand (at most maxRedirects), each hop re-checked against the allowlist. Host names
 * are resolved by our own lookup, which refuses non-public addresses and hands the vetted address
 * to the socket, so the address checked is the address connected to (no DNS rebinding between
 * check and connect). Size is bounded by Content-Length and by counting bytes; one deadline
 * covers the whole fetch. Messages never contain the URL: it may carry a presigned query.
 */
export async function fetchSource(rawUrl: string, options: FetchOptions): Promise<FetchedSource> {
  const deadline = Date.now() + options.timeoutMs;
  let url = toAllowed(rawUrl, options.allowlist);
  for (let hop = 0; ; hop++) {
    const response = await requestOnce(url, options, deadline);
    if (REDIRECTS.has(response.status)) {
      if (hop >= options.maxRedirects) {
        throw new SourceFetchError('SOURCE_NOT_ALLOWED', 'too many redirects', true);
      }
      if (!response.location)
        throw new SourceFetchError('SOURCE_UNAVAILABLE', 'redirect without Location', true);
      let next: URL;
      try {
        next = new URL(response.location, url);
      } catch {
        throw new SourceFetchError('SOURCE_NOT_ALLOWED', 'redirect to an invalid URL', true);
      }
      url = toAllowed(next, options.allowlist, 'a redirect');
      continue;
    }
    if (response.status >= 200 && response.status < 300) {
      return { body: response.body!, contentType: response.contentType };
    }
    // 408/429/5xx may pass; any other answer will not change by asking again.
    const transient = response.status >= 500 || response.status === 408 || response.status === 429;
    throw new SourceFetchError('SOURCE_UNAVAILABLE', `the source answered ${response.status}`, !transient);
  }
}

function toAllowed(raw: string | URL, allowlist: readonly AllowEntry[], what = 'the source'): URL {
  try {
    return checkSourceUrl(raw, allowlist);
  } catch (error) {
    if (error instanceof SourceRejectedError) {
      throw new SourceFetchError('SOURCE_NOT_ALLOWED', `${what} is not allowed: ${error.reason}`, true);
    }
    throw error;
  }
}

interface HopResponse {
  status: number;
  location: string | null;
  contentType: string | null;
  body: Buffer | null;
}

function vettedLookup(): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as LookupAddress[];
      if (!list.length || list.some((a) => isNonPublicAddress(a.address))) {
        const refused = Object.assign(new Error('the source host resolves to a non-public address'), {
          code: 'SOURCE_NOT_ALLOWED',
        });
        return callback(refused, '', 0);
      }
      if ((options as { all?: boolean }).all) {
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      }
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

function requestOnce(url: URL, options: FetchOptions, deadline: number): Promise<HopResponse> {
  const remaining = deadline - Date.now();
  if (remaining <= 0)
    return Promise.reject(new SourceFetchError('SOURCE_TIMEOUT', 'the source timed out', false));
  // An IP literal bypasses lookup(); it is allowed only as an explicit allowlist entry, and a
  // literal reaching here passed that check. Names go through the vetted lookup.
  const literal = isExplicitIpEntry(url, options.allowlist);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<HopResponse>((resolve, reject) => {
    let settled = false;
    const finish = (error: Error | null, value?: HopResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(value!);
    };
    const req = client.request(
      url,
      {
        method: 'GET',
        headers: {
          accept: 'image/png, image/jpeg, image/webp, image/gif',
          'user-agent': 'listing-material-transfer/1',
        },
        agent: false,
        ...(literal ? {} : { lookup: vettedLookup() }),
      },
      (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        const header = (name: string) => {
          const v = res.headers[name];
          return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
        };
        if (status < 200 || status >= 300) {
          res.resume();
          return finish(null, { status, location: header('location'), contentType: null, body: null });
        }
        const declared = Number(header('content-length'));
        if (Number.isFinite(declared) && declared > options.maxBytes) {
          req.destroy();
          return finish(
            new SourceFetchError(
              'MEDIA_TOO_LARGE',
              `the source is larger than ${options.maxBytes} bytes`,
              true,
            ),
          );
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > options.maxBytes) {
            req.destroy();
            finish(
              new SourceFetchError(
                'MEDIA_TOO_LARGE',
                `the source is larger than ${options.maxBytes} bytes`,
                true,
              ),
            );
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          finish(null, {
            status,
            location: null,
            contentType: header('content-type'),
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', (e) =>
          finish(new SourceFetchError('SOURCE_UNAVAILABLE', `the source failed: ${safeCode(e)}`, false)),
        );
        res.on('aborted', () =>
          finish(new SourceFetchError('SOURCE_UNAVAILABLE', 'the source closed the connection', false)),
        );
      },
    );
    const timer = setTimeout(() => {
      finish(new SourceFetchError('SOURCE_TIMEOUT', 'the source timed out', false));
      req.destroy();
    }, remaining);
    req.on('error', (e: Error & { code?: string }) => {
      if (e.code === 'SOURCE_NOT_ALLOWED') {
        finish(new SourceFetchError('SOURCE_NOT_ALLOWED', e.message, true));
      } else {
        finish(
          new SourceFetchError(
            'SOURCE_UNAVAILABLE',
            `the source could not be reached: ${safeCode(e)}`,
            false,
          ),
        );
      }
    });
    req.end();
  });
}

/** Node error codes only (ECONNREFUSED, ...): messages can quote the URL. */
function safeCode(error: Error & { code?: string }): string {
  return /^[A-Z_]{2,40}$/.test(error.code ?? '') ? error.code! : 'network error';
}
