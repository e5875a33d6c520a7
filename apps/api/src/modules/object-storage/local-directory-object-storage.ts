import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { assertObjectKey, ObjectStorageError, type ObjectStorage, type StoredObject } from './object-storage';

interface MetaFile {
  v: 1;
  size: number;
  contentType: string;
  sha256: string;
}

/**
 * ObjectStorage on a local directory:
 *   <root>/data/<key>        the bytes
 *   <root>/meta/<key>.json   content type, size, SHA-256 — the commit marker of the object
 *   <root>/tmp/              staging files, on the same filesystem so rename() is atomic
 * A write stages both files (fsynced), renames the data, then the meta. An object exists only
 * once its meta exists and matches its data; a crash between the renames leaves data without
 * meta, which reads as absent and is simply rewritten by the next put. get() verifies the
 * checksum, so a torn replacement is detected instead of served.
 */
export class LocalDirectoryObjectStorage implements ObjectStorage {
  private readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  async put(key: string, body: Buffer, options: { contentType: string }): Promise<StoredObject> {
    assertObjectKey(key);
    const object: StoredObject = {
      key,
      size: body.length,
      contentType: options.contentType,
      sha256: createHash('sha256').update(body).digest('hex'),
    };
    const meta: MetaFile = {
      v: 1,
      size: object.size,
      contentType: object.contentType,
      sha256: object.sha256,
    };
    const dataTmp = await this.stage(body);
    const metaTmp = await this.stage(Buffer.from(JSON.stringify(meta)));
    try {
      await mkdir(path.dirname(this.dataPath(key)), { recursive: true });
      await mkdir(path.dirname(this.metaPath(key)), { recursive: true });
      await rename(dataTmp, this.dataPath(key));
      await rename(metaTmp, this.metaPath(key));
    } finally {
      await rm(dataTmp, { force: true });
      await rm(metaTmp, { force: true });
    }
    return object;
  }

  async putIfAbsent(
    key: string,
    body: Buffer,
    options: { contentType: string },
  ): Promise<{ created: boolean; object: StoredObject }> {
    // Callers write under deterministic keys and serialise per key through a database row, so a
    // check-then-write is enough here; an S3 implementation would use If-None-Match: *.
    const existing = await this.head(key);
    if (existing) return { created: false, object: existing };
    return { created: true, object: await this.put(key, body, options) };
  }

  async get(key: string): Promise<{ object: StoredObject; body: Buffer } | null> {
    const object = await this.head(key);
    if (!object) return null;
    let body: Buffer;
    try {
      body = await readFile(this.dataPath(key));
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
    if (body.length !== object.size || createHash('sha256').update(body).digest('hex') !== object.sha256) {
      throw new ObjectStorageError('OBJECT_CORRUPT', 'stored object does not match its checksum');
    }
    return { object, body };
  }

  async head(key: string): Promise<StoredObject | null> {
    assertObjectKey(key);
    let meta: MetaFile;
    try {
      meta = JSON.parse(await readFile(this.metaPath(key), 'utf8')) as MetaFile;
      const data = await stat(this.dataPath(key));
      if (data.size !== meta.size) return null; // data replaced without its meta yet: not committed
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
    return { key, size: meta.size, contentType: meta.contentType, sha256: meta.sha256 };
  }

  async delete(key: string): Promise<boolean> {
    assertObjectKey(key);
    // Meta first: the object disappears atomically, the data file is then garbage.
    const existed = await unlink(this.metaPath(key)).then(
      () => true,
      (error: unknown) => {
        if (isNotFound(error)) return false;
        throw error;
      },
    );
    await rm(this.dataPath(key), { force: true });
    return existed;
  }

  private dataPath(key: string): string {
    return path.join(this.root, 'data', ...key.split('/'));
  }

  private metaPath(key: string): string {
    return path.join(this.root, 'meta', ...key.split('/')) + '.json';
  }

  /** Writes bytes to a fresh staging file and fsyncs it, so the rename publishes durable bytes. */
  private async stage(bytes: Buffer): Promise<string> {
    const dir = path.join(this.root, 'tmp');
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, `${Date.now()}-${randomBytes(8).toString('hex')}`);
    const handle = await open(file, 'wx');
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return file;
  }
}

function isNotFound(error: unknown): boolean {
  return (error as { code?: string })?.code === 'ENOENT';
}
