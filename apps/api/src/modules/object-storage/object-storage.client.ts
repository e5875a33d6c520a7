/**
 * Object storage behind an interface an S3-compatible store can implement: keys are opaque
 * strings (`a/b/c`), every object carries its content type and SHA-256, writes are atomic (a
 * reader sees the old object or the new one, never a part) and idempotent by key.
 */
export interface StoredObject {
  readonly key: string;
  readonly size: number;
  readonly contentType: string;
  /** Hex SHA-256 of the bytes (S3: ChecksumSHA256). */
  readonly sha256: string;
}

export interface ObjectStorage {
  /** Writes (or replaces) the object. */
  put(key: string, body: Buffer, options: { contentType: string }): Promise<StoredObject>;
  /**
   * Writes the object unless one already exists under the key (S3: `If-None-Match: *`).
   * `created` is false when it existed; the existing object is returned untouched.
   */
  putIfAbsent(
    key: string,
    body: Buffer,
    options: { contentType: string },
  ): Promise<{ created: boolean; object: StoredObject }>;
  get(key: string): Promise<{ object: StoredObject; body: Buffer } | null>;
  head(key: string): Promise<StoredObject | null>;
  /** True when something was deleted. */
  delete(key: string): Promise<boolean>;
}

export const OBJECT_STORAGE = Symbol('OBJECT_STORAGE');

const KEY_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

export class ObjectStorageError extends Error {
  constructor(
    readonly code: 'OBJECT_KEY_INVALID' | 'OBJECT_CORRUPT',
    message: string,
  ) {
    super(message);
    this.name = 'ObjectStorageError';
  }
}

/** Keys are relative, `/`-separated segments without `.`/`..` tricks: safe as file paths too. */
export function assertObjectKey(key: string): void {
  if (key.length > 512 || !KEY_RE.test(key) || key.split('/').some((s) => s === '.' || s === '..')) {
    throw new ObjectStorageError('OBJECT_KEY_INVALID', 'invalid object key');
  }
}
