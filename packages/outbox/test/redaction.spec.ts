import { MAX_ERROR_LENGTH, redactError, redactText, REDACTED } from '../src';

describe('redaction of errors', () => {
  it('drops query strings and user info of URLs but keeps host and path', () => {
    const out = redactText(
      'GET https://u:pw@bucket.s3.amazonaws.com/a/b.jpg?X-Amz-Signature=abc&X-Amz-Credential=k failed',
    );
    expect(out).toBe(`GET https://${REDACTED}@bucket.s3.amazonaws.com/a/b.jpg?${REDACTED} failed`);
  });

  it('masks bearer tokens, JWTs and secret-named values in several syntaxes', () => {
    const out = redactText(
      'Authorization: Bearer abcdef123456 token=s3cr3t "password":"hunter2" api_key: AKIA123 ' +
        'jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl orderId=o-1',
    );
    for (const secret of ['abcdef123456', 's3cr3t', 'hunter2', 'AKIA123', 'eyJhbGci'])
      expect(out).not.toContain(secret);
    expect(out).toContain('orderId=o-1');
  });

  it('masks a secret pair that follows a harmless `name:` (the usual shape of an error message)', () => {
    expect(redactText('provider rejected: password=hunter2')).toBe(`provider rejected: password=${REDACTED}`);
    expect(redactText('vendor said no: token=s3cr3t-value, retry later')).toBe(
      `vendor said no: token=${REDACTED}, retry later`,
    );
    expect(redactText('a: b: secret=xyz1')).toBe(`a: b: secret=${REDACTED}`);
    expect(redactText('rejected: password: hunter2')).toBe(`rejected: password: ${REDACTED}`);
    expect(redactText('status: 503 order: o-1')).toBe('status: 503 order: o-1');
  });

  it('scans a long chain of pairs in one pass (no recursion to overflow), and drops NUL', () => {
    // 200,000 nested `name=` levels: a recursive scan exceeds the call stack here.
    const chain = 'a='.repeat(200_000) + 'password=hunter2';
    expect(redactText(chain, chain.length + 100)).toBe(`${'a='.repeat(200_000)}password=${REDACTED}`);
    // PostgreSQL refuses NUL in text: a dead letter carrying one could never be written.
    expect(redactText('bad\u0000byte')).toBe('badbyte');
  });

  it('masks long opaque strings', () => {
    expect(redactText(`key ${'A1b2'.repeat(15)} end`)).toBe(`key ${REDACTED} end`);
  });

  it('bounds the length', () => {
    const out = redactText('x '.repeat(5000));
    expect(out.length).toBe(MAX_ERROR_LENGTH);
  });

  it('keeps the error name and code, never the stack', () => {
    const error = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    expect(redactError(error)).toBe('Error ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:6379');
    expect(redactError('plain password=x')).toBe(`plain password=${REDACTED}`);
  });
});
