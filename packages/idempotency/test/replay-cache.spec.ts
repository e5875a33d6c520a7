import { ReplayCache, idempotencyOptions } from '@listing/idempotency';

/** An entry whose result names its key: a lookup answering another key's entry shows. */
const entry = (key: string, expiresAt: number) => ({
  operation: 'POST /x',
  fingerprintKeyId: 'k1',
  fingerprint: Buffer.alloc(32, key),
  policy: 'p-v1',
  status: 201,
  result: { id: key },
  expiresAt,
});

describe('ReplayCache', () => {
  it('forgets entries at their record expiry', () => {
    const cache = new ReplayCache(10);
    cache.set('b', entry('b', 5000));
    cache.set('a', entry('a', 1000));
    expect(cache.get('a', 999)).toEqual(entry('a', 1000));
    expect(cache.get('a', 1000)).toBeUndefined();
    expect(cache.get('b', 1000)).toEqual(entry('b', 5000)); // the others keep theirs
  });

  it('evicts the least recently used entry past capacity', () => {
    const cache = new ReplayCache(2);
    cache.set('a', entry('a', Infinity));
    cache.set('b', entry('b', Infinity));
    cache.get('a');
    cache.set('c', entry('c', Infinity));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toEqual(entry('a', Infinity));
    expect(cache.get('c')).toEqual(entry('c', Infinity));
  });

  it('size 0 disables it', () => {
    const cache = new ReplayCache(0);
    cache.set('a', entry('a', Infinity));
    expect(cache.get('a')).toBeUndefined();
  });
});

describe('idempotencyOptions', () => {
  it('defaults to 48 h and refuses less than 24 h', () => {
    expect(idempotencyOptions().ttlSeconds).toBe(48 * 3600);
    expect(() => idempotencyOptions({ ttlSeconds: 23 * 3600 })).toThrow(/24 h/);
  });
});
