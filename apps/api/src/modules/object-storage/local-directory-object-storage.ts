import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import {
  assertObjectKey,
  ObjectStorageError,
  type ObjectStorage,
  type StoredObject,
} from './object-storage.client';

interface MetaFile {
  v: 1;
  size: number;
  contentType: string;
  sha256: string;
  /** The data file's name beside `<key>`, when it is not `<key>` itself (putIfAbsent). */
  file?: string;
}

// Names of putIfAbsent's data files: `<last key segment>~<random>`. Keys never contain `~`.
const OWN_FILE_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*~[0-9a-f]{16}$/;

/**
 * ObjectStorage on a local directory:
 *   <root>/data/<key>        the bytes
 *   <root>/meta/<key>.json   content type, size, SHA-256 — the commit marker of the object
 *   <root>/tmp/              staging files, on the same filesystem so rename() is atomic
 * A write stages both files (fsynced), renames the data, then the meta. An object exists only
 * once its meta exists and matches its data; a crash between the renames leaves data without
 * meta, which reads as absent and is simply rewritten by the next put. get() verifies the
 * checksum, so a torn replacement is detected instead of served.
 * putIfAbsent is exclusive without any lock: its bytes go to a file of their own
 * (`<key>~<random>`, named in the meta) and the meta is hard-linked into place, which fails when
 * one is already there. Racing writers never touch each other's bytes; exactly one creates.
 */
export class LocalDirectoryObjectStorage implements ObjectStorage {
  private readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  async put(key: string, body: Buffer, options: { contentType: string }): Promise<StoredObject> {
    assertObjectKey(key);
    const object = describe(key, body, options.contentType);
    const dataTmp = await this.stage(body);
    const metaTmp = await this.stage(metaBytes(object));
    const previous = await this.find(key, { committedOnly: false });
    try {
      await this.makeParents(key);
      await rename(dataTmp, this.dataPath(key));
      await rename(metaTmp, this.metaPath(key));
      // A putIfAbsent object's own data file is garbage once the meta no longer names it.
      if (previous && previous.dataFile !== this.dataPath(key)) await rm(previous.dataFile, { force: true });
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
    assertObjectKey(key);
    const existing = await this.find(key);
    if (existing) {
      await this.sweepOrphans(key, path.basename(existing.dataFile));
      return { created: false, object: existing.object };
    }
    const object = describe(key, body, options.contentType);
    const file = `${path.basename(this.dataPath(key))}~${randomBytes(8).toString('hex')}`;
    const ownData = path.join(path.dirname(this.dataPath(key)), file);
    const dataTmp = await this.stage(body);
    const metaTmp = await this.stage(metaBytes(object, file));
    try {
      await this.makeParents(key);
      await rename(dataTmp, ownData);
      try {
        await link(metaTmp, this.metaPath(key));
        await this.sweepOrphans(key, file);
        return { created: true, object };
      } catch (error) {
        await rm(ownData, { force: true });
        if ((error as { code?: string })?.code !== 'EEXIST') throw error;
      }
      const winner = await this.find(key);
      if (winner) {
        await this.sweepOrphans(key, path.basename(winner.dataFile));
        return { created: false, object: winner.object };
      }
      // A meta whose data is gone or replaced: no putIfAbsent leaves that (its data is in place
      // before the link), only a put() that died between its renames or a file removed by hand.
      // Replacing it here could not be exclusive: refuse, loudly.
      throw new ObjectStorageError('OBJECT_CORRUPT', 'a broken object is in the way of putIfAbsent');
    } finally {
      await rm(dataTmp, { force: true });
      await rm(metaTmp, { force: true });
    }
  }

  async get(key: string): Promise<{ object: StoredObject; body: Buffer } | null> {
    const found = await this.find(key);
    if (!found) return null;
    const { object, dataFile } = found;
    let body: Buffer;
    try {
      body = await readFile(dataFile);
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
    return (await this.find(key))?.object ?? null;
  }

  async delete(key: string): Promise<boolean> {
    const found = await this.find(key, { committedOnly: false });
    // Meta first: the object disappears atomically, the data file is then garbage.
    const existed = await unlink(this.metaPath(key)).then(
      () => true,
      (error: unknown) => {
        if (isNotFound(error)) return false;
        throw error;
      },
    );
    await rm(this.dataPath(key), { force: true });
    if (found) await rm(found.dataFile, { force: true });
    return existed;
  }

  /** The committed object under `key` and the file holding its bytes, or null. */
  private async find(
    key: string,
    { committedOnly = true } = {},
  ): Promise<{ object: StoredObject; dataFile: string } | null> {
    assertObjectKey(key);
    let meta: MetaFile;
    let dataFile: string;
    try {
      meta = JSON.parse(await readFile(this.metaPath(key), 'utf8')) as MetaFile;
      if (meta.file !== undefined && !OWN_FILE_RE.test(meta.file)) {
        throw new ObjectStorageError('OBJECT_CORRUPT', 'stored object names an invalid data file');
      }
      dataFile = meta.file ? path.join(path.dirname(this.dataPath(key)), meta.file) : this.dataPath(key);
      // data replaced without its meta yet: not committed
      if (committedOnly && (await stat(dataFile)).size !== meta.size) return null;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
    const object = { key, size: meta.size, contentType: meta.contentType, sha256: meta.sha256 };
    return { object, dataFile };
  }

  /**
   * Once `key` has its meta, every other `<key>~<random>` beside it is garbage: a writer killed
   * between renaming its data and linking its meta, or a loser still on its way to EEXIST (which
   * then finds its file gone and removes nothing). Only the meta's own file is kept.
   */
  private async sweepOrphans(key: string, keep: string): Promise<void> {
    const dir = path.dirname(this.dataPath(key));
    const prefix = `${path.basename(this.dataPath(key))}~`;
    const names = await readdir(dir).catch(() => [] as string[]);
    await Promise.all(
      names
        .filter((name) => name !== keep && name.startsWith(prefix) && OWN_FILE_RE.test(name))
        .map((name) => rm(path.join(dir, name), { force: true })),
    );
  }

  private async makeParents(key: string): Promise<void> {
    await mkdir(path.dirname(this.dataPath(key)), { recursive: true });
    await mkdir(path.dirname(this.metaPath(key)), { recursive: true });
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

function describe(key: string, body: Buffer, contentType: string): StoredObject {
  return { key, size: body.length, contentType, sha256: createHash('sha256').update(body).digest('hex') };
}

function metaBytes(object: StoredObject, file?: string): Buffer {
  const meta: MetaFile = {
    v: 1,
    size: object.size,
    contentType: object.contentType,
    sha256: object.sha256,
    ...(file ? { file } : {}),
  };
  return Buffer.from(JSON.stringify(meta));
}

function isNotFound(error: unknown): boolean {
  return (error as { code?: string })?.code === 'ENOENT';
}
