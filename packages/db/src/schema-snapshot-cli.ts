import { MIGRATIONS_DIR } from './paths';
import { schemaSnapshot } from './schema-snapshot';

/**
 * Prints the schema snapshot of the migrations in sql/ on stdout (progress on stderr). Run by
 * scripts/schema-snapshot.sh, which writes or checks sql/schema.sql. ADMIN_DATABASE_URL: a
 * superuser of the local server; PG_DUMP: the pg_dump binary (default `pg_dump`).
 */
async function main() {
  const text = await schemaSnapshot({
    adminUrl: process.env.ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    directory: MIGRATIONS_DIR,
    pgDump: process.env.PG_DUMP || undefined,
    log: (line) => console.error(line),
  });
  process.stdout.write(text);
}

main().catch((error: unknown) => {
  console.error(`schema snapshot failed: ${(error as Error).message}`);
  process.exit(1);
});
