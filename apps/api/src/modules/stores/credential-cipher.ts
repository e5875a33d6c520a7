import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConfigError } from '../../config/app-config';

/** Platform credentials of a store, in clear: only ever in memory, never logged or returned. */
export interface StoreCredentials {
  apiKey: string;
  apiSecret: string;
}

export interface EncryptedCredentials {
  keyId: string;
  iv: Buffer;
  ciphertext: Buffer;
  authTag: Buffer;
}

/** Where a ciphertext belongs; bound as additional authenticated data. */
export interface CredentialScope {
  workspaceId: string;
  storeId: string;
  version: number;
}

export class CredentialDecryptError extends Error {
  readonly code = 'CREDENTIAL_DECRYPT_FAILED';
  constructor(reason: string) {
    super(`stored credentials cannot be decrypted (${reason})`);
  }
}

/**
 * AES-256-GCM with a key ring: the current key encrypts, every listed key decrypts what it
 * encrypted (rotation). The scope (workspace, store, version) is the AAD, so a ciphertext copied
 * onto another store or version fails authentication. Error messages never carry key material
 * or plaintext.
 */
export class CredentialCipher {
  private constructor(
    private readonly keys: ReadonlyMap<string, Buffer>,
    private readonly currentKeyId: string,
  ) {}

  /** Parses `"id:base64-32-bytes,id2:..."`; throws a ConfigError naming the bad entries only. */
  static parse(spec: string, currentKeyId: string): CredentialCipher {
    const keys = new Map<string, Buffer>();
    const problems: string[] = [];
    for (const [i, entry] of spec.split(',').entries()) {
      const at = entry.indexOf(':');
      const id = entry.slice(0, at).trim();
      const key = Buffer.from(entry.slice(at + 1).trim(), 'base64');
      if (at <= 0 || !/^[A-Za-z0-9._-]{1,64}$/.test(id))
        problems.push(`CREDENTIAL_KEYS: entry ${i + 1} has no valid id`);
      else if (key.length !== 32) problems.push(`CREDENTIAL_KEYS: key ${id} is not 32 bytes of base64`);
      else if (keys.has(id)) problems.push(`CREDENTIAL_KEYS: key ${id} is listed twice`);
      else keys.set(id, key);
    }
    if (!keys.has(currentKeyId)) problems.push('CREDENTIAL_KEY_ID: not one of CREDENTIAL_KEYS');
    if (problems.length) throw new ConfigError(problems);
    return new CredentialCipher(keys, currentKeyId);
  }

  encrypt(credentials: StoreCredentials, scope: CredentialScope): EncryptedCredentials {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentKeyId)!, iv);
    cipher.setAAD(aad(scope));
    const plaintext = Buffer.from(
      JSON.stringify({ apiKey: credentials.apiKey, apiSecret: credentials.apiSecret }),
    );
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    plaintext.fill(0);
    return { keyId: this.currentKeyId, iv, ciphertext, authTag: cipher.getAuthTag() };
  }

  decrypt(encrypted: EncryptedCredentials, scope: CredentialScope): StoreCredentials {
    const key = this.keys.get(encrypted.keyId);
    if (!key) throw new CredentialDecryptError(`unknown key id ${encrypted.keyId}`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, encrypted.iv);
      decipher.setAAD(aad(scope));
      decipher.setAuthTag(encrypted.authTag);
      const plaintext = Buffer.concat([decipher.update(encrypted.ciphertext), decipher.final()]);
      const parsed = JSON.parse(plaintext.toString('utf8')) as StoreCredentials;
      plaintext.fill(0);
      return { apiKey: parsed.apiKey, apiSecret: parsed.apiSecret };
    } catch {
      throw new CredentialDecryptError('authentication failed');
    }
  }
}

function aad(scope: CredentialScope): Buffer {
  return Buffer.from(`store-credentials:v1:${scope.workspaceId}:${scope.storeId}:${scope.version}`);
}
