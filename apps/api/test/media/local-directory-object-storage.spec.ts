import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LocalDirectoryObjectStorage } from '../../src/modules/object-storage/local-directory-object-storage';
import { ObjectStorageError } from '../../src/modules/object-storage/object-storage.client';

describe('LocalDirectoryObjectStorage', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'objects-'));
  const storage = new LocalDirectoryObjectStorage(root);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('puts, heads, gets and deletes by key with content type and SHA-256', async () => {
    const body = Buffer.from('hello object');
    const put = await storage.put('ws/a/original', body, { contentType: 'image/png' });
    const sha256 = createHash('sha256').update(body).digest('hex');
    expect(put).toEqual({ key: 'ws/a/original', size: body.length, contentType: 'image/png', sha256 });
    expect(await storage.head('ws/a/original')).toEqual(put);
    expect((await storage.get('ws/a/original'))!.body.equals(body)).toBe(true);
    expect(readdirSync(path.join(root, 'tmp'))).toEqual([]); // nothing left staged
    expect(await storage.delete('ws/a/original')).toBe(true);
    expect(await storage.head('ws/a/original')).toBeNull();
    expect(await storage.get('ws/a/original')).toBeNull();
    expect(await storage.delete('ws/a/original')).toBe(false);
  });

  it('putIfAbsent writes once: a second call leaves the first object untouched', async () => {
    const first = await storage.putIfAbsent('ws/b/thumb.png', Buffer.from('one'), {
      contentType: 'image/png',
    });
    const dir = path.join(root, 'data', 'ws', 'b');
    const [own] = readdirSync(dir);
    expect(own).toMatch(/^thumb\.png~[0-9a-f]{16}$/);
    const file = path.join(dir, own!);
    const before = statSync(file);
    const second = await storage.putIfAbsent('ws/b/thumb.png', Buffer.from('two'), {
      contentType: 'image/png',
    });
    expect(first.created).toBe(true);
    expect(second).toEqual({ created: false, object: first.object });
    expect(statSync(file).ino).toBe(before.ino);
    expect((await storage.get('ws/b/thumb.png'))!.body.toString()).toBe('one');
  });

  it('putIfAbsent under a race: exactly one writer creates, every caller gets its object, its bytes stay', async () => {
    const key = 'ws/race/thumb.png';
    const bodies = Array.from({ length: 20 }, (_, i) => Buffer.from(`writer ${i} `.repeat(1000 + i)));
    const results = await Promise.all(
      bodies.map((body) => storage.putIfAbsent(key, body, { contentType: 'image/png' })),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const winner = results.find((r) => r.created)!.object;
    for (const r of results) expect(r.object).toEqual(winner);
    const stored = await storage.get(key);
    expect(createHash('sha256').update(stored!.body).digest('hex')).toBe(winner.sha256);
    // the losers' bytes are gone; nothing staged is left
    expect(readdirSync(path.join(root, 'data', 'ws', 'race'))).toHaveLength(1);
    expect(readdirSync(path.join(root, 'tmp'))).toEqual([]);
    // put() replaces it in place and drops the old file; delete() removes everything
    await storage.put(key, Buffer.from('replaced'), { contentType: 'image/png' });
    expect((await storage.get(key))!.body.toString()).toBe('replaced');
    expect(readdirSync(path.join(root, 'data', 'ws', 'race'))).toEqual(['thumb.png']);
    await storage.putIfAbsent('ws/race/other', Buffer.from('x'), { contentType: 'image/png' });
    expect(await storage.delete('ws/race/other')).toBe(true);
    expect(readdirSync(path.join(root, 'data', 'ws', 'race'))).toEqual(['thumb.png']);
  });

  it('putIfAbsent removes the data file a writer killed before its meta link left behind', async () => {
    // The crash window: a writer renamed its data into place, then died before linking its meta.
    const dir = path.join(root, 'data', 'ws', 'crash');
    await storage.put('ws/crash/neighbour', Buffer.from('n'), { contentType: 'image/png' });
    writeFileSync(path.join(dir, 'original~00112233445566ff'), 'orphaned bytes');
    writeFileSync(path.join(dir, 'neighbour~00112233445566ff'), 'not this key');
    const made = await storage.putIfAbsent('ws/crash/original', Buffer.from('copy'), {
      contentType: 'image/png',
    });
    expect(made.created).toBe(true);
    expect((await storage.get('ws/crash/original'))!.body.toString()).toBe('copy');
    const left = readdirSync(dir).sort();
    expect(left.filter((f) => f.startsWith('original'))).toHaveLength(1); // the meta's own file only
    expect(left).toContain('neighbour~00112233445566ff'); // another key's files are not touched
    // A writer that found no object, then died after its rename: the next caller sweeps it too.
    writeFileSync(path.join(dir, 'original~ffeeddccbbaa0099'), 'late orphan');
    const again = await storage.putIfAbsent('ws/crash/original', Buffer.from('other'), {
      contentType: 'image/png',
    });
    expect(again.created).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('original'))).toHaveLength(1);
    expect((await storage.get('ws/crash/original'))!.body.toString()).toBe('copy');
  });

  it('putIfAbsent refuses to write over a broken object (meta without its data) rather than race', async () => {
    await storage.putIfAbsent('ws/e/x', Buffer.from('abc'), { contentType: 'image/gif' });
    for (const file of readdirSync(path.join(root, 'data', 'ws', 'e')))
      rmSync(path.join(root, 'data', 'ws', 'e', file));
    expect(await storage.head('ws/e/x')).toBeNull();
    await expect(
      storage.putIfAbsent('ws/e/x', Buffer.from('def'), { contentType: 'image/gif' }),
    ).rejects.toMatchObject({
      code: 'OBJECT_CORRUPT',
    });
    expect(readdirSync(path.join(root, 'data', 'ws', 'e'))).toEqual([]); // nothing left behind
  });

  it('a meta naming a data file outside its folder is refused', async () => {
    await storage.putIfAbsent('ws/d/x', Buffer.from('abc'), { contentType: 'image/gif' });
    const metaFile = path.join(root, 'meta', 'ws', 'd', 'x.json');
    const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(metaFile, JSON.stringify({ ...meta, file: '../../../etc/passwd' }));
    await expect(storage.get('ws/d/x')).rejects.toMatchObject({ code: 'OBJECT_CORRUPT' });
  });

  it('treats data without its meta (a crash between the renames) as absent, and detects corruption', async () => {
    await storage.put('ws/c/x', Buffer.from('abc'), { contentType: 'image/gif' });
    rmSync(path.join(root, 'meta', 'ws', 'c', 'x.json'));
    expect(await storage.head('ws/c/x')).toBeNull();
    await storage.put('ws/c/y', Buffer.from('abc'), { contentType: 'image/gif' });
    writeFileSync(path.join(root, 'data', 'ws', 'c', 'y'), 'xyz'); // same size, other bytes
    await expect(storage.get('ws/c/y')).rejects.toMatchObject({ code: 'OBJECT_CORRUPT' });
  });

  it('refuses keys that could escape the root', async () => {
    for (const key of ['../etc/passwd', '/abs', 'a/../../b', 'a//b', '', 'a/./b']) {
      await expect(storage.put(key, Buffer.from('x'), { contentType: 'image/png' })).rejects.toBeInstanceOf(
        ObjectStorageError,
      );
    }
  });
});
