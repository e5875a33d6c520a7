import { createHash, randomBytes } from 'node:crypto';

/**
 * Opaque bearer tokens: 32 random bytes, base64url, with a prefix that says what they are (and
 * lets secret scanners find leaked ones). Only their SHA-256 is stored: high-entropy tokens do
 * not need a slow hash.
 */
export const ACCESS_PREFIX = 'lat_';
export const REFRESH_PREFIX = 'lrt_';

export function newToken(prefix: string): { token: string; hash: Buffer } {
  const token = prefix + randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token) };
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
