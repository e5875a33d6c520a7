import { createHash, createHmac, randomBytes } from 'node:crypto';

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

/**
 * The pair a refresh rotation issues, derived from the refresh token it consumed with a server
 * key: a replay of that refresh (its answer was lost) computes the same pair again, and nobody
 * without the key can compute it from a stolen old token.
 */
export function successorTokens(
  key: string,
  usedRefreshToken: string,
): { access: { token: string; hash: Buffer }; refresh: { token: string; hash: Buffer } } {
  const derive = (prefix: string, purpose: string) => {
    const token =
      prefix + createHmac('sha256', key).update(`${purpose}\0${usedRefreshToken}`).digest('base64url');
    return { token, hash: hashToken(token) };
  };
  return { access: derive(ACCESS_PREFIX, 'access'), refresh: derive(REFRESH_PREFIX, 'refresh') };
}
