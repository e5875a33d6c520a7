import { randomBytes, randomUUID } from 'node:crypto';
import { ConfigError, loadConfig, loadPlatformConfig } from '../../src/config/app-config';
import { CredentialCipher, CredentialDecryptError } from '../../src/modules/stores/credential-cipher';

const key = () => randomBytes(32).toString('base64');

describe('CredentialCipher (AES-256-GCM with a key ring)', () => {
  const scope = { workspaceId: randomUUID(), storeId: randomUUID(), version: 1 };
  const secret = { apiKey: 'valid-abc-123', apiSecret: 'shh-456' };

  it('round-trips, never contains the plaintext, and binds the ciphertext to its store and version', () => {
    const cipher = CredentialCipher.parse(`k1:${key()}`, 'k1');
    const enc = cipher.encrypt(secret, scope);
    expect(enc.keyId).toBe('k1');
    expect(enc.ciphertext.includes(Buffer.from(secret.apiKey))).toBe(false);
    expect(cipher.decrypt(enc, scope)).toEqual(secret);
    expect(() => cipher.decrypt(enc, { ...scope, version: 2 })).toThrow(CredentialDecryptError);
    expect(() => cipher.decrypt(enc, { ...scope, storeId: randomUUID() })).toThrow(CredentialDecryptError);
  });

  it('rotates: a new current key encrypts, the old one still decrypts what it encrypted', () => {
    const old = key();
    const before = CredentialCipher.parse(`k1:${old}`, 'k1').encrypt(secret, scope);
    const rotated = CredentialCipher.parse(`k1:${old},k2:${key()}`, 'k2');
    expect(rotated.decrypt(before, scope)).toEqual(secret);
    expect(rotated.encrypt(secret, scope).keyId).toBe('k2');
    expect(() => CredentialCipher.parse(`k2:${key()}`, 'k2').decrypt(before, scope)).toThrow(
      /unknown key id/,
    );
  });

  it('refuses malformed key rings without echoing key material', () => {
    const short = Buffer.from('short').toString('base64');
    let error: unknown;
    try {
      CredentialCipher.parse(`k1:${short},:${key()}`, 'k3');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toHaveLength(3);
    expect((error as Error).message).not.toContain(short);
  });

  it('production refuses the public development key', () => {
    expect(() => loadPlatformConfig({ NODE_ENV: 'production' })).toThrow(/CREDENTIAL_KEYS/);
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        IDEMPOTENCY_FINGERPRINT_KEYS: 'p1:a-real-secret',
        IDEMPOTENCY_FINGERPRINT_KEY_ID: 'p1',
      }),
    ).toThrow(/CREDENTIAL_KEYS/);
    expect(
      loadPlatformConfig({ NODE_ENV: 'production', CREDENTIAL_KEYS: `p1:${key()}`, CREDENTIAL_KEY_ID: 'p1' })
        .CREDENTIAL_KEY_ID,
    ).toBe('p1');
  });
});
