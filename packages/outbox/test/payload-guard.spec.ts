import {
  assertSafePayload,
  findSecretPaths,
  isSecretKey,
  isSecretValue,
  MAX_PAYLOAD_BYTES,
  OutboxError,
} from '../src';

describe('payload guard', () => {
  it.each([
    'password',
    'userPassword',
    'pwd',
    'token',
    'accessToken',
    'refresh_token',
    'cookie',
    'Set-Cookie',
    'clientSecret',
    'secret',
    'Authorization',
    'credentials',
    'storeCredential',
    'apiKey',
    'api_key',
    'X-API-Key',
    'privateKey',
    'presignedUrl',
    'signedUrl',
    'signed_url',
    'sessionId',
    'awsAccessKeyId',
  ])('rejects the field name %s', (key) => {
    expect(isSecretKey(key)).toBe(true);
  });

  it.each([
    'orderId',
    'storeId',
    'version',
    'mediaId',
    'author',
    'authorId',
    'maxTokens',
    'key',
    'imageUrl',
    'revision',
  ])('accepts the field name %s', (key) => {
    expect(isSecretKey(key)).toBe(false);
  });

  it.each([
    'https://bucket.s3.amazonaws.com/a.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc',
    'https://storage.googleapis.com/b/o?X-Goog-Signature=abc&X-Goog-Credential=x',
    'https://acct.blob.core.windows.net/c/b?sv=2020&sig=abc',
    'https://d111.cloudfront.net/x.jpg?Expires=1&Signature=abc&Key-Pair-Id=K',
    'https://api.example/cb?access_token=abc',
    'https://user:hunter2@example.com/x',
    'Bearer abcdefghijklmnop',
    'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig',
  ])('rejects the value %s', (value) => {
    expect(isSecretValue(value)).toBe(true);
  });

  it.each(['https://cdn.example/img/1.jpg', 'https://example.com/p?page=2&size=10', 'plain text', 'sku-123'])(
    'accepts the value %s',
    (value) => {
      expect(isSecretValue(value)).toBe(false);
    },
  );

  it('finds secrets at any depth, in arrays too, and reports paths only', () => {
    const payload = {
      orderId: 'o1',
      store: { auth: { x: 1 }, name: 'n' },
      items: [{ sku: 'a' }, { sku: 'b', media: [{ url: 'https://s3/x?X-Amz-Signature=zz' }] }],
      deep: { a: { b: { c: { d: { password: 'p' } } } } },
    };
    expect(findSecretPaths(payload)).toEqual([
      'store.auth',
      'items[1].media[0].url',
      'deep.a.b.c.d.password',
    ]);
  });

  it('throws a typed error with the paths and without the values', () => {
    let error: unknown;
    try {
      assertSafePayload({ nested: { apiKey: 'AKIA-very-secret' } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutboxError);
    expect(error).toMatchObject({ code: 'OUTBOX_PAYLOAD_REJECTED', details: { paths: ['nested.apiKey'] } });
    expect(JSON.stringify(error) + (error as Error).message).not.toContain('AKIA');
  });

  it('accepts ids, versions and snapshots; rejects non-objects and oversized payloads', () => {
    expect(() =>
      assertSafePayload({ storeId: 's', revision: 3, snapshot: { title: 't', tags: ['a'] } }),
    ).not.toThrow();
    expect(() => assertSafePayload([] as never)).toThrow(OutboxError);
    expect(() => assertSafePayload('x' as never)).toThrow(OutboxError);
    expect(() => assertSafePayload({ blob: 'x'.repeat(MAX_PAYLOAD_BYTES) })).toThrow(/limit/);
  });

  it('rejects absurdly deep nesting instead of recursing forever', () => {
    let payload: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 100; i++) payload = { child: payload };
    expect(() => assertSafePayload(payload)).toThrow(/deeper than/);
  });
});
