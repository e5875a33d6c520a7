import { FingerprintKeyring, IdempotencyConfigError } from '@listing/idempotency';

const SECRET_1 = 'first-secret-0123456789';
const SECRET_2 = 'second-secret-0123456789';

describe('FingerprintKeyring', () => {
  const ring = new FingerprintKeyring('k1', { k1: SECRET_1 });

  it('ignores key order and whitespace (RFC 8785 canonical JSON)', () => {
    const a = ring.fingerprint('POST /x', { b: 1, a: { d: [1, 2], c: 'x' } }).current();
    const b = ring.fingerprint('POST /x', JSON.parse('{ "a": {"c":"x","d":[1,2]},   "b": 1 }')).current();
    expect(a.digest.equals(b.digest)).toBe(true);
    expect(a.keyId).toBe('k1');
  });

  it('changes with the operation, the body and meaning-changing headers', () => {
    const base = ring.fingerprint('PATCH /x', { a: 1 }, { 'if-match': '"1"' }).current().digest;
    expect(ring.fingerprint('PATCH /y', { a: 1 }, { 'if-match': '"1"' }).current().digest.equals(base)).toBe(
      false,
    );
    expect(ring.fingerprint('PATCH /x', { a: 2 }, { 'if-match': '"1"' }).current().digest.equals(base)).toBe(
      false,
    );
    expect(ring.fingerprint('PATCH /x', { a: 1 }, { 'if-match': '"2"' }).current().digest.equals(base)).toBe(
      false,
    );
    expect(ring.fingerprint('PATCH /x', { a: 1 }, { 'If-Match': '"1"' }).current().digest.equals(base)).toBe(
      true,
    );
  });

  it('is an HMAC: another secret gives another digest', () => {
    const other = new FingerprintKeyring('k1', { k1: SECRET_2 });
    expect(
      other
        .fingerprint('POST /x', { a: 1 })
        .current()
        .digest.equals(ring.fingerprint('POST /x', { a: 1 }).current().digest),
    ).toBe(false);
  });

  it('verifies records made under a rotated-out key while signing new ones with the current key', () => {
    const old = ring.fingerprint('POST /x', { a: 1 }).current();
    const rotated = new FingerprintKeyring('k2', { k2: SECRET_2, k1: SECRET_1 });
    const fp = rotated.fingerprint('POST /x', { a: 1 });
    expect(fp.current().keyId).toBe('k2');
    expect(fp.matches('k1', old.digest)).toBe(true);
    expect(fp.matches('k2', old.digest)).toBe(false);
    const retired = new FingerprintKeyring('k2', { k2: SECRET_2 });
    expect(retired.fingerprint('POST /x', { a: 1 }).matches('k1', old.digest)).toBeUndefined();
  });

  it('parses "id:secret" lists and refuses bad configuration', () => {
    const parsed = FingerprintKeyring.parse(`k2:${SECRET_2}, k1:${SECRET_1}`, 'k2');
    expect(parsed.has('k1') && parsed.has('k2')).toBe(true);
    expect(() => FingerprintKeyring.parse(`k1:${SECRET_1}`, 'k9')).toThrow(IdempotencyConfigError);
    expect(() => FingerprintKeyring.parse('k1:short', 'k1')).toThrow(/16 bytes/);
    expect(() => FingerprintKeyring.parse('nocolon', 'k1')).toThrow(IdempotencyConfigError);
  });
});
