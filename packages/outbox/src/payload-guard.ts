import { OutboxError } from './outbox-error';

/**
 * Outbox payloads carry ids, versions or immutable snapshots only. This guard rejects, at any
 * depth, field names that look like secrets and string values that are credentials in disguise
 * (signed / presigned URLs, URLs with embedded passwords, bearer tokens).
 */

/** Single words (after splitting camelCase / snake_case / kebab-case) that mark a secret. */
const SECRET_WORDS = new Set([
  'password',
  'passwd',
  'pwd',
  'passphrase',
  'token',
  'cookie',
  'cookies',
  'secret',
  'secrets',
  'authorization',
  'auth',
  'credential',
  'credentials',
  'apikey',
  'presigned',
  'signature',
  'jwt',
  'bearer',
]);

/** Whole normalised names (lower case, separators removed) that mark a secret. */
const SECRET_NAMES = new Set([
  'apikey',
  'xapikey',
  'accesskey',
  'accesskeyid',
  'secretkey',
  'privatekey',
  'clientsecret',
  'sessionid',
  'sessionkey',
  'setcookie',
  'signedurl',
  'presignedurl',
  'signedlink',
  'refreshtoken',
  'accesstoken',
]);

/** Adjacent word pairs that mark a secret although each word alone does not. */
const SECRET_PAIRS = [
  ['api', 'key'],
  ['access', 'key'],
  ['private', 'key'],
  ['secret', 'key'],
  ['signed', 'url'],
  ['signed', 'uri'],
  ['signed', 'link'],
  ['session', 'id'],
  ['session', 'key'],
] as const;

/** Query parameters that make a URL a bearer credential (S3, GCS, Azure SAS, CloudFront, generic). */
const SIGNATURE_PARAMS = new Set([
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
  'x-goog-signature',
  'x-goog-credential',
  'googleaccessid',
  'signature',
  'sig',
  'key-pair-id',
  'policy',
  'token',
  'access_token',
  'auth',
  'apikey',
  'api_key',
  'x-oss-signature',
  'ossaccesskeyid',
]);

const MAX_DEPTH = 32;
export const MAX_PAYLOAD_BYTES = 64 * 1024;

function words(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** True when a field name looks like it holds a secret. */
export function isSecretKey(key: string): boolean {
  const parts = words(key);
  const joined = parts.join('');
  if (SECRET_NAMES.has(joined)) return true;
  if (parts.some((w) => SECRET_WORDS.has(w))) return true;
  for (let i = 0; i + 1 < parts.length; i++) {
    if (SECRET_PAIRS.some(([a, b]) => parts[i] === a && parts[i + 1] === b)) return true;
  }
  return false;
}

/** True when a string value is a credential in disguise. */
export function isSecretValue(value: string): boolean {
  if (/^\s*(bearer|basic)\s+[a-z0-9._~+/=-]{8,}/i.test(value)) return true;
  if (/^eyJ[a-zA-Z0-9_-]{8,}\.[a-zA-Z0-9_-]{8,}\./.test(value)) return true; // a JWT
  const urlMatch = /^[a-z][a-z0-9+.-]*:\/\/\S+/i.exec(value.trim());
  if (!urlMatch) return false;
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return false;
  }
  if (url.password) return true;
  for (const name of url.searchParams.keys()) {
    if (SIGNATURE_PARAMS.has(name.toLowerCase()) || isSecretKey(name)) return true;
  }
  return false;
}

/** Paths (`a.b[2].c`) of every secret-looking field or value in a payload. */
export function findSecretPaths(payload: unknown): string[] {
  const found: string[] = [];
  const visit = (value: unknown, path: string, depth: number) => {
    if (depth > MAX_DEPTH) {
      found.push(`${path || '$'} (nested deeper than ${MAX_DEPTH})`);
      return;
    }
    if (typeof value === 'string') {
      if (isSecretValue(value)) found.push(path || '$');
      return;
    }
    if (Array.isArray(value)) {
      value.forEach((item, i) => visit(item, `${path}[${i}]`, depth + 1));
      return;
    }
    if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
        const childPath = path ? `${path}.${key}` : key;
        if (isSecretKey(key)) found.push(childPath);
        else visit(child, childPath, depth + 1);
      }
    }
  };
  visit(payload, '', 0);
  return found;
}

/**
 * Throws OUTBOX_PAYLOAD_REJECTED unless the payload is a JSON object without secrets and within
 * the size limit. The error names the offending paths, never their values.
 */
export function assertSafePayload(payload: unknown): void {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new OutboxError('OUTBOX_PAYLOAD_REJECTED', 'outbox payload must be a JSON object');
  }
  const paths = findSecretPaths(payload);
  if (paths.length) {
    throw new OutboxError(
      'OUTBOX_PAYLOAD_REJECTED',
      `outbox payload carries secret-looking fields (${paths.join(', ')}); send ids, versions or snapshots`,
      { paths },
    );
  }
  const bytes = Buffer.byteLength(JSON.stringify(payload), 'utf8');
  if (bytes > MAX_PAYLOAD_BYTES) {
    throw new OutboxError(
      'OUTBOX_PAYLOAD_REJECTED',
      `outbox payload is ${bytes} bytes; the limit is ${MAX_PAYLOAD_BYTES} (send ids, not documents)`,
      { bytes },
    );
  }
}
