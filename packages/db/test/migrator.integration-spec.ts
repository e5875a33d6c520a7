import { cp, mkdtemp, readdir, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import {
  MIGRATIONS_DIR,
  MigrationChecksumMismatchError,
  MigrationFailedError,
  SCHEMA_SNAPSHOT_FILE,
  migrate,
} from '@listing/db';
import { createTestDatabase, type TestDatabase } from '@listing/testing';

describe('migration runner (plain numbered SQL files)', () => {
  let dir: string;
  const databases: TestDatabase[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'migrations-'));
    await cp(MIGRATIONS_DIR, dir, { recursive: true });
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  afterAll(async () => {
    await Promise.all(databases.map((d) => d.drop()));
  });

  /** The migration files of `dir`: every .sql file but the schema snapshot. */
  const migrationFiles = async () =>
    (await readdir(dir)).filter((f) => f.endsWith('.sql') && f !== SCHEMA_SNAPSHOT_FILE).sort();

  const emptyDatabase = async () => {
    const db = await createTestDatabase({ empty: true });
    databases.push(db);
    return db;
  };
  const ledger = async (url: string) => {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      return (
        await c.query<{ version: number; name: string }>(
          'select version, name from schema_migrations order by version',
        )
      ).rows;
    } finally {
      await c.end();
    }
  };

  it('applies every file once; a second run is a no-op', async () => {
    const db = await emptyDatabase();
    const files = await migrationFiles();
    const first = await migrate({ connectionString: db.ownerUrl, directory: dir });
    expect(first.applied).toEqual(files);
    const second = await migrate({ connectionString: db.ownerUrl, directory: dir });
    expect(second).toEqual({ applied: [], alreadyApplied: files });
    expect((await ledger(db.ownerUrl)).map((r) => r.name)).toEqual(files);
  });

  it('concurrent runs apply each file exactly once', async () => {
    const db = await emptyDatabase();
    const files = await migrationFiles();
    const results = await Promise.all(
      Array.from({ length: 4 }, () => migrate({ connectionString: db.ownerUrl, directory: dir })),
    );
    const appliedTotal = results.flatMap((r) => r.applied).sort();
    expect(appliedTotal).toEqual(files);
    expect((await ledger(db.ownerUrl)).map((r) => r.name)).toEqual(files);
  });

  it('never runs the schema snapshot (sql/schema.sql), whatever it holds', async () => {
    const db = await emptyDatabase();
    await writeFile(path.join(dir, SCHEMA_SNAPSHOT_FILE), 'select 1/0; -- not a migration');
    const result = await migrate({ connectionString: db.ownerUrl, directory: dir });
    expect(result.applied).toEqual(await migrationFiles());
    expect(result.applied).not.toContain(SCHEMA_SNAPSHOT_FILE);
  });

  it('refuses an applied file whose checksum changed, before running anything', async () => {
    const db = await emptyDatabase();
    await migrate({ connectionString: db.ownerUrl, directory: dir });
    await appendFile(path.join(dir, '001_foundation.sql'), '\n-- an innocent-looking edit\n');
    await writeFile(path.join(dir, '900_later.sql'), 'create table later_thing (id int);');
    const run = migrate({ connectionString: db.ownerUrl, directory: dir });
    await expect(run).rejects.toBeInstanceOf(MigrationChecksumMismatchError);
    await expect(migrate({ connectionString: db.ownerUrl, directory: dir })).rejects.toThrow(
      /001_foundation\.sql was already applied with checksum [0-9a-f]{64}.*immutable/,
    );
    // the pending file was not applied either
    expect((await ledger(db.ownerUrl)).some((r) => r.name === '900_later.sql')).toBe(false);
  });

  it('each file runs in its own transaction: a failing file leaves nothing behind', async () => {
    const db = await emptyDatabase();
    await writeFile(path.join(dir, '901_broken.sql'), 'create table half_done (id int);\nselect 1/0;');
    await expect(migrate({ connectionString: db.ownerUrl, directory: dir })).rejects.toBeInstanceOf(
      MigrationFailedError,
    );
    const c = new Client({ connectionString: db.ownerUrl });
    await c.connect();
    try {
      const table = await c.query(`select to_regclass('half_done') as t`);
      expect(table.rows[0].t).toBeNull();
    } finally {
      await c.end();
    }
    const names = (await ledger(db.ownerUrl)).map((r) => r.name);
    expect(names).not.toContain('901_broken.sql');
    expect(names).toContain('001_foundation.sql'); // earlier files committed on their own
  });
});
