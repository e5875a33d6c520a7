import { createHmac, timingSafeEqual } from 'node:crypto';
import canonicalize from 'canonicalize';
import { IdempotencyBodyNotCanonicalError, IdempotencyConfigError } from './errors';

/**
 * HMAC-SHA256 fingerprints of requests. The input is the RFC 8785 canonical JSON of the
 * operation, the body and the headers that change meaning (e.g. If-Match), so key order and
 * whitespace never matter. An HMAC with a server secret, never a plain hash: low-entropy bodies
 * cannot be guessed offline from a leaked table. Each record stores the id of the key that made
 * it, so secrets rotate without breaking replays of older records.
 */
export class FingerprintKeyring {
  private readonly keys: ReadonlyMap<string, Buffer>;

  constructor(
    readonly currentKeyId: string,
    keys: Record<string, string | Buffer>,
  ) {
    this.keys = new Map(Object.entries(keys).map(([id, secret]) => [id, Buffer.from(secret)]));
    const current = this.keys.get(currentKeyId);
    if (!current) throw new IdempotencyConfigError(`fingerprint key "${currentKeyId}" is not in the keyring`);
    for (const [id, secret] of this.keys) {
      if (secret.length < 16)
        throw new IdempotencyConfigError(`fingerprint key "${id}" must be at least 16 bytes`);
    }
  }

  /**
   * Parses `id1:secret1,id2:secret2`. Secrets may not contain commas; base64 is a good choice.
   */
  static parse(spec: string, currentKeyId: string): FingerprintKeyring {
    const keys: Record<string, string> = {};
    for (const part of spec
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)) {
      const at = part.indexOf(':');
      if (at <= 0)
        throw new IdempotencyConfigError('fingerprint keys must look like "id:secret,id2:secret2"');
      keys[part.slice(0, at)] = part.slice(at + 1);
    }
    return new FingerprintKeyring(currentKeyId, keys);
  }

  has(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  /**
   * The fingerprint of one request, computed lazily per key id. Never throws for a body: one that
   * RFC 8785 cannot encode gives a fingerprint whose first use (current, digestFor, matches)
   * throws IdempotencyBodyNotCanonicalError, a typed error, naming where the value is.
   */
  fingerprint(operation: string, body: unknown, meaningHeaders: Record<string, string | undefined> = {}) {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(meaningHeaders)) {
      if (value !== undefined) headers[name.toLowerCase()] = value;
    }
    let canonical: string | IdempotencyBodyNotCanonicalError;
    try {
      canonical = canonicalize({ operation, body: body ?? null, headers }) ?? 'null';
    } catch {
      // canonicalize throws plain Errors (Infinity, NaN), JSON.stringify a TypeError (bigint), a
      // cycle a RangeError: whichever it was, the body is the cause.
      const [path, reason] = unencodable(body);
      canonical = new IdempotencyBodyNotCanonicalError(path, reason);
    }
    return new RequestFingerprint(canonical, this.currentKeyId, (keyId) => this.keys.get(keyId));
  }
}

/**
 * Where in a body that canonicalize refused the first value it cannot encode is, and why; paths
 * as the application names fields (`price.amount`, `items.0`, `(body)` for the root). Iterative,
 * and each object is visited once, so neither depth nor a cycle can make it throw.
 */
function unencodable(body: unknown): [path: string, reason: string] {
  const seen = new Set<object>();
  const stack: Array<[unknown, string[]]> = [[body, []]];
  while (stack.length) {
    const [node, path] = stack.pop()!;
    const at = () => path.join('.') || '(body)';
    if (typeof node === 'number' && !Number.isFinite(node)) return [at(), 'is not a finite number'];
    if (typeof node === 'bigint') return [at(), 'is a bigint, not a JSON number'];
    if (node === null || typeof node !== 'object' || ArrayBuffer.isView(node) || seen.has(node)) continue;
    seen.add(node);
    const entries = Object.entries(node);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      stack.push([child, [...path, key]]);
    }
  }
  return ['(body)', 'is not a JSON value'];
}

export class RequestFingerprint {
  private readonly digests = new Map<string, Buffer>();

  /** `canonical` is the RFC 8785 text, or why the request has none (thrown on first use). */
  constructor(
    private readonly canonical: string | IdempotencyBodyNotCanonicalError,
    readonly currentKeyId: string,
    private readonly secretOf: (keyId: string) => Buffer | undefined,
  ) {}

  /** Digest under the current key: what a new record stores. */
  current(): { keyId: string; digest: Buffer } {
    return { keyId: this.currentKeyId, digest: this.digestFor(this.currentKeyId)! };
  }

  /** Digest under a given key id, or undefined when that key is no longer configured. */
  digestFor(keyId: string): Buffer | undefined {
    if (typeof this.canonical !== 'string') throw this.canonical;
    let digest = this.digests.get(keyId);
    if (!digest) {
      const secret = this.secretOf(keyId);
      if (!secret) return undefined;
      digest = createHmac('sha256', secret).update(this.canonical).digest();
      this.digests.set(keyId, digest);
    }
    return digest;
  }

  /** Constant-time comparison against a stored digest; undefined when the key is unknown. */
  matches(keyId: string, stored: Buffer): boolean | undefined {
    const mine = this.digestFor(keyId);
    if (!mine) return undefined;
    return mine.length === stored.length && timingSafeEqual(mine, stored);
  }
}
