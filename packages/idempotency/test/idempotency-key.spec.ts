import { IdempotencyKeyInvalidError, idempotencyOperation, parseIdempotencyKey } from '@listing/idempotency';

const KEY = '8F421C70-1D2B-4C1E-9D53-3F0E3C2B1A00';

describe('parseIdempotencyKey', () => {
  it('accepts a UUID and lowercases it', () => {
    expect(parseIdempotencyKey(KEY)).toBe(KEY.toLowerCase());
  });

  it('accepts the RFC 8941 sf-string form', () => {
    expect(parseIdempotencyKey(`"${KEY}"`)).toBe(KEY.toLowerCase());
  });

  it('returns null when the header is absent', () => {
    expect(parseIdempotencyKey(undefined)).toBeNull();
  });

  it.each([['not-a-uuid'], [''], ['"unterminated'], [`${KEY}x`], [`"${KEY}`]])('rejects %p', (value) => {
    expect(() => parseIdempotencyKey(value)).toThrow(IdempotencyKeyInvalidError);
  });

  it('rejects a header sent twice (array or comma-joined)', () => {
    expect(() => parseIdempotencyKey([KEY, KEY])).toThrow(/more than once/);
    expect(() => parseIdempotencyKey(`${KEY}, ${KEY}`)).toThrow(/more than once/);
  });
});

describe('idempotencyOperation', () => {
  it('is METHOD + normalised path without the query string', () => {
    expect(
      idempotencyOperation('post', '/v1/workspaces//7D9F3C1A-0B2E-4C5D-8E6F-A1B2C3D4E5F6/items/?x=1'),
    ).toBe('POST /v1/workspaces/7d9f3c1a-0b2e-4c5d-8e6f-a1b2c3d4e5f6/items');
    // Only UUIDs are one id in any case: another spelling of a route or a feature id is another
    // request, never a replay of the first (the handler may answer it 404).
    expect(idempotencyOperation('POST', '/v1/d/features/NORMALIZE-TEXT/executions')).not.toBe(
      idempotencyOperation('POST', '/v1/d/features/normalize-text/executions'),
    );
    expect(idempotencyOperation('POST', '/v1/Workspaces/ABC')).toBe('POST /v1/Workspaces/ABC');
    expect(idempotencyOperation('PATCH', '/v1/a/b#frag')).toBe('PATCH /v1/a/b');
    expect(idempotencyOperation('POST', '/')).toBe('POST /');
  });
});
