import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client } from 'pg';
import { MigrationChecksumMismatchError, MigrationFailedError, MigrationFileError } from './errors';

/**
 * Plain numbered SQL migrations (sql/NNN_name.sql).
 *
 * A small runner instead of a library because we need exactly three guarantees together and
 * they fit in one page: each file runs in its own transaction together with its ledger row;
 * concurrent runners are serialised by a session advisory lock (the loser waits, then finds
 * nothing to do); an applied file whose checksum changed is refused before anything runs.
 */

const FILE_RE = /^(\d+)_[a-z0-9_-]+\.sql$/i;
/** The generated schema snapshot (scripts/schema-snapshot.sh) lives beside the migrations; never run. */
export const SCHEMA_SNAPSHOT_FILE = 'schema.sql';
// Arbitrary but fixed: every runner of this project takes the same lock.
const LOCK_KEY = 7_302_118_001;

export interface MigrationFile {
  version: number;
  name: string;
  checksum: string;
  sql: string;
}

export interface MigrateOptions {
  /** Connection string of the owner role: it creates and owns every object. */
  connectionString: string;
  directory: string;
  log?: (line: string) => void;
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: string[];
}

export async function loadMigrations(directory: string): Promise<MigrationFile[]> {
  const names = (await readdir(directory))
    .filter((n) => n.endsWith('.sql') && n !== SCHEMA_SNAPSHOT_FILE)
    .sort();
  const files: MigrationFile[] = [];
  const seen = new Map<number, string>();
  for (const name of names) {
    const match = FILE_RE.exec(name);
    if (!match) throw new MigrationFileError(`${name}: expected NNN_name.sql`);
    const version = Number(match[1]);
    const clash = seen.get(version);
    if (clash) throw new MigrationFileError(`${name} and ${clash} share version ${version}`);
    seen.set(version, name);
    // Line endings are normalised so a checkout on another OS does not look like an edit.
    const text = (await readFile(path.join(directory, name), 'utf8')).replace(/\r\n/g, '\n');
    files.push({ version, name, sql: text, checksum: sha256(text) });
  }
  return files.sort((a, b) => a.version - b.version);
}

export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  const log = options.log ?? (() => undefined);
  const files = await loadMigrations(options.directory);
  const client = new Client({ connectionString: options.connectionString });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [LOCK_KEY]);
    try {
      return await applyPending(client, files, log);
    } finally {
      await client.query('select pg_advisory_unlock($1)', [LOCK_KEY]);
    }
  } finally {
    await client.end();
  }
}

async function applyPending(
  client: Client,
  files: MigrationFile[],
  log: (line: string) => void,
): Promise<MigrateResult> {
  await client.query(`
    create table if not exists schema_migrations (
      version    integer primary key,
      name       text not null,
      checksum   text not null,
      applied_at timestamptz not null default now()
    )`);
  const { rows } = await client.query<{ version: number; name: string; checksum: string }>(
    'select version, name, checksum from schema_migrations order by version',
  );
  const applied = new Map(rows.map((r) => [r.version, r]));
  const byVersion = new Map(files.map((f) => [f.version, f]));

  // Verify all history before changing anything.
  for (const row of rows) {
    const file = byVersion.get(row.version);
    if (!file) {
      throw new MigrationFileError(
        `migration ${row.name} is recorded as applied but is missing from the migrations directory`,
      );
    }
    if (file.checksum !== row.checksum) {
      throw new MigrationChecksumMismatchError(file.name, row.checksum, file.checksum);
    }
  }

  const result: MigrateResult = { applied: [], alreadyApplied: rows.map((r) => r.name) };
  for (const file of files) {
    if (applied.has(file.version)) continue;
    await client.query('begin');
    try {
      await client.query(file.sql);
      await client.query('insert into schema_migrations (version, name, checksum) values ($1, $2, $3)', [
        file.version,
        file.name,
        file.checksum,
      ]);
      await client.query('commit');
    } catch (error) {
      await client.query('rollback');
      throw new MigrationFailedError(file.name, error);
    }
    result.applied.push(file.name);
    log(`applied ${file.name}`);
  }
  return result;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
