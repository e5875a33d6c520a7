import 'reflect-metadata';
import type { CallHandler, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { lastValueFrom, of } from 'rxjs';
import {
  canonicalHeader,
  FingerprintKeyring,
  IDEMPOTENCY_REQUEST_FIELD,
  Idempotent,
  IdempotencyInterceptor,
  IdempotencyKeyInvalidError,
  IdempotencyKeyRequiredError,
  IdempotentResponse,
  type IdempotentRequestContext,
} from '@listing/idempotency';

class Routes {
  @Idempotent({ required: true })
  required() {}
  @Idempotent({ required: false, meaningHeaders: ['if-match'] })
  optional() {}
  plain() {}
}

const ring = new FingerprintKeyring('k1', { k1: 'interceptor-secret-0123' });
const interceptor = new IdempotencyInterceptor(new Reflector(), ring);

function context(
  handler: keyof Routes,
  headers: Record<string, string>,
  reply = { headers: {} as Record<string, string> },
) {
  const request: Record<string, unknown> = {
    method: 'POST',
    url: '/v1/things/?x=1',
    headers,
    body: { a: 1 },
  };
  const ctx = {
    getType: () => 'http',
    getHandler: () => Routes.prototype[handler],
    getClass: () => Routes,
    switchToHttp: () => ({
      getRequest: () => request,
      getResponse: () => ({ header: (n: string, v: string) => (reply.headers[n] = v) }),
    }),
  } as unknown as ExecutionContext;
  return { ctx, request, reply };
}
const handler = (value: unknown): CallHandler => ({ handle: () => of(value) });

describe('IdempotencyInterceptor', () => {
  // Validation pipes run after interceptors; the key's error waits for runPrepared so that an
  // invalid body is reported first (auth → rate limit → validation → idempotency).
  it.each([
    ['a missing key on a route that requires one', 'required', {}, IdempotencyKeyRequiredError],
    ['a malformed key', 'optional', { 'idempotency-key': 'nope' }, IdempotencyKeyInvalidError],
  ] as const)('hands %s to runPrepared instead of throwing', async (_name, route, headers, type) => {
    const { ctx, request } = context(route, headers);
    await expect(lastValueFrom(interceptor.intercept(ctx, handler('x')))).resolves.toBe('x');
    const derived = request[IDEMPOTENCY_REQUEST_FIELD] as IdempotentRequestContext;
    expect(derived.key).toBeNull();
    expect(derived.keyError).toBeInstanceOf(type);
  });

  it('no error for a missing key on a route where it is optional', () => {
    const { ctx, request } = context('optional', {});
    interceptor.intercept(ctx, handler('x'));
    expect((request[IDEMPOTENCY_REQUEST_FIELD] as IdempotentRequestContext).keyError).toBeNull();
  });

  it('derives key, operation and fingerprint (with If-Match) for the handler', async () => {
    const key = '8f421c70-1d2b-4c1e-9d53-3f0e3c2b1a00';
    const { ctx, request, reply } = context('optional', { 'idempotency-key': `"${key}"`, 'if-match': '"4"' });
    const body = await lastValueFrom(
      interceptor.intercept(ctx, handler(new IdempotentResponse({ ok: true }, true))),
    );
    const derived = request[IDEMPOTENCY_REQUEST_FIELD] as IdempotentRequestContext;
    expect(derived.key).toBe(key);
    expect(derived.operation).toBe('POST /v1/things');
    expect(
      derived.fingerprint
        .current()
        .digest.equals(ring.fingerprint('POST /v1/things', { a: 1 }, { 'if-match': '"4"' }).current().digest),
    ).toBe(true);
    expect(body).toEqual({ ok: true });
    expect(reply.headers['Idempotent-Replayed']).toBe('true');
  });

  it('one If-Match meaning is one fingerprint, however it is spelled', () => {
    const digest = (ifMatch: string) => {
      const { ctx, request } = context('optional', { 'if-match': ifMatch });
      interceptor.intercept(ctx, handler('x'));
      return (request[IDEMPOTENCY_REQUEST_FIELD] as IdempotentRequestContext).fingerprint
        .current()
        .digest.toString('hex');
    };
    expect(new Set(['"1"', ' "1" ', '"1", "1"', ' "1",'].map(digest)).size).toBe(1);
    expect(digest('"7", "1"')).toBe(digest('"1","7"'));
    expect(digest('"2"')).not.toBe(digest('"1"'));
    expect(digest('W/"1"')).not.toBe(digest('"1"')); // a weak tag alone matches nothing
    expect(digest('W/"1"')).not.toBe(digest('')); // ...and is not the same as no condition
    // A blank If-Match is no condition, as the handlers read it: the same request as none.
    const none = (() => {
      const { ctx, request } = context('optional', {});
      interceptor.intercept(ctx, handler('x'));
      return (request[IDEMPOTENCY_REQUEST_FIELD] as IdempotentRequestContext).fingerprint
        .current()
        .digest.toString('hex');
    })();
    expect(new Set(['', ' ', '\t'].map(digest))).toEqual(new Set([none]));
    expect(canonicalHeader('if-match', ' "2",W/"3" , "1", "2" ')).toBe('"1", "2", W/"3"');
    expect(canonicalHeader('if-match', ' * ')).toBe('*');
    expect(canonicalHeader('if-none-match', ' W/"3", "1" ')).toBe('W/"3", "1"');
  });

  it('routes without @Idempotent ignore the header entirely', async () => {
    const { ctx, request } = context('plain', { 'idempotency-key': 'not even a uuid' });
    expect(await lastValueFrom(interceptor.intercept(ctx, handler('plain')))).toBe('plain');
    expect(request[IDEMPOTENCY_REQUEST_FIELD]).toBeUndefined();
  });
});
