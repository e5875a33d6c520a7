import { ReplayCache, idempotencyOptions } from '@listing/idempotency';

const entry = (expiresAt: number) => ({
  operation: 'POST /x',
  fingerprintKeyId: 'k1',
  fingerprint: Buffer.alloc(32),
  policy: 'p-v1',
  status: 201,
  result: { id: 1 },
  expiresAt,
});

describe('ReplayCache', () => {
  it('forgets entries at their record expiry', () => {
    const cache = new ReplayCache(10);
    cache.set('a', entry(1000));
    expect(cache.get('a', 999)).toBeDefined();
    expect(cache.get('a', 1000)).toBeUndefined();
  });

  it('evicts the least recently used entry past capacity', () => {
    const cache = new ReplayCache(2);
    cache.set('a', entry(Infinity));
    cache.set('b', entry(Infinity));
    cache.get('a');
    cache.set('c', entry(Infinity));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
    expect(cache.get('c')).toBeDefined();
  });

  it('size 0 disables it', () => {
    const cache = new ReplayCache(0);
    cache.set('a', entry(Infinity));
    expect(cache.get('a')).toBeUndefined();
  });
});

describe('idempotencyOptions', () => {
  it('defaults to 48 h and refuses less than 24 h', () => {
    expect(idempotencyOptions().ttlSeconds).toBe(48 * 3600);
    expect(() => idempotencyOptions({ ttlSeconds: 23 * 3600 })).toThrow(/24 h/);
  });
});
