import 'reflect-metadata';
import type { CallHandler, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Database } from '@listing/db';
import { lastValueFrom, of } from 'rxjs';
import {
  FingerprintKeyring,
  IDEMPOTENCY_REQUEST_FIELD,
  Idempotent,
  IdempotencyBodyNotCanonicalError,
  IdempotencyError,
  IdempotencyInterceptor,
  IdempotencyService,
  idempotencyOptions,
  type IdempotentRequestContext,
  type IdempotencyResultPolicy,
} from '@listing/idempotency';

const ring = new FingerprintKeyring('k1', { k1: 'body-secret-0123456789' });

/** What JSON.parse makes of a number beyond a double's range. */
const overflowing = JSON.parse('{"title":"x","price":{"amount":1e400},"tags":[1,-1e400]}') as unknown;

describe('the fingerprint of a body RFC 8785 cannot encode', () => {
  it.each([
    ['a number beyond a double (JSON.parse gives Infinity)', overflowing, 'price.amount'],
    ['-Infinity at the root', -Infinity, '(body)'],
    ['NaN in an array', [1, NaN], '1'],
    ['a bigint', { n: 10n }, 'n'],
  ])('%s: building it never throws; using it throws a typed error naming the path', (_name, body, path) => {
    const fingerprint = ring.fingerprint('POST /x', body);
    for (const use of [
      () => fingerprint.current(),
      () => fingerprint.digestFor('k1'),
      () => fingerprint.matches('k1', Buffer.alloc(32)),
    ]) {
      let thrown: unknown;
      try {
        use();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(IdempotencyBodyNotCanonicalError);
      expect(thrown).toBeInstanceOf(IdempotencyError); // mapped by the application, never a 500
      expect(thrown).toMatchObject({ code: 'VALIDATION_FAILED', path });
      expect((thrown as Error).message).toContain(path);
    }
  });

  it('a cycle is a typed error too, not a stack overflow', () => {
    const body: Record<string, unknown> = { a: 1 };
    body.self = body;
    expect(() => ring.fingerprint('POST /x', body).current()).toThrow(IdempotencyBodyNotCanonicalError);
  });

  it('-0 and tiny numbers are values: they fingerprint as 0', () => {
    const zero = ring.fingerprint('POST /x', { a: 0 }).current().digest;
    expect(ring.fingerprint('POST /x', { a: -0 }).current().digest.equals(zero)).toBe(true);
    expect(ring.fingerprint('POST /x', JSON.parse('{"a":1e-400}')).current().digest.equals(zero)).toBe(true);
  });
});

class Routes {
  @Idempotent({ required: false })
  optional() {}
}

describe('an idempotent route given such a body', () => {
  it('the interceptor does not throw: validation (the pipes) still answers first', async () => {
    const request: Record<string, unknown> = {
      method: 'POST',
      url: '/v1/things',
      headers: { 'idempotency-key': '8f421c70-1d2b-4c1e-9d53-3f0e3c2b1a00' },
      body: overflowing,
    };
    const ctx = {
      getType: () => 'http',
      getHandler: () => Routes.prototype.optional,
      getClass: () => Routes,
      switchToHttp: () => ({ getRequest: () => request, getResponse: () => ({ header: () => undefined }) }),
    } as unknown as ExecutionContext;
    const next: CallHandler = { handle: () => of('handled') };
    const interceptor = new IdempotencyInterceptor(new Reflector(), ring);
    await expect(lastValueFrom(interceptor.intercept(ctx, next))).resolves.toBe('handled');
    const derived = request[IDEMPOTENCY_REQUEST_FIELD] as IdempotentRequestContext;
    expect(() => derived.fingerprint.current()).toThrow(IdempotencyBodyNotCanonicalError);
  });

  const policy: IdempotencyResultPolicy<string> = {
    name: 'test-v1',
    serialize: (r) => r,
    restore: async (s) => String(s),
  };
  const owner = { workspaceId: 'w', userId: 'u' };

  /** A database that records what is asked of it: with a key, nothing must be. */
  function fakeDb() {
    const calls: string[] = [];
    const db = {
      isInTransaction: () => false,
      withWorkspace: async (_w: string, fn: () => Promise<unknown>) => {
        calls.push('withWorkspace');
        return fn();
      },
    } as unknown as Database;
    return { db, calls };
  }

  it('runPrepared with a key refuses it (typed) before any cache, flight or row', async () => {
    const { db, calls } = fakeDb();
    const service = new IdempotencyService(db, idempotencyOptions());
    const work = jest.fn(async () => 'done');
    await expect(
      service.runPrepared({
        owner,
        key: '8f421c70-1d2b-4c1e-9d53-3f0e3c2b1a00',
        operation: 'POST /x',
        fingerprint: ring.fingerprint('POST /x', overflowing),
        policy,
        status: 201,
        prepare: async () => undefined,
        work,
      }),
    ).rejects.toBeInstanceOf(IdempotencyBodyNotCanonicalError);
    expect(calls).toEqual([]);
    expect(work).not.toHaveBeenCalled();
  });

  it('runPrepared without a key never needs the fingerprint', async () => {
    const { db } = fakeDb();
    const service = new IdempotencyService(db, idempotencyOptions());
    const outcome = await service.runPrepared({
      owner,
      key: null,
      operation: 'POST /x',
      fingerprint: ring.fingerprint('POST /x', overflowing),
      policy,
      status: 201,
      prepare: async () => undefined,
      work: async () => 'done',
    });
    expect(outcome).toEqual({ result: 'done', status: 201, replayed: false });
  });
});
