import { migrate } from './migrator';
import { MIGRATIONS_DIR } from './paths';

/** `pnpm migrate`: applies pending migrations as the owner role (MIGRATION_DATABASE_URL). */
async function main() {
  const url = process.env.MIGRATION_DATABASE_URL;
  if (!url) {
    console.error(
      'MIGRATION_DATABASE_URL is not set (owner role, e.g. postgres://listing_owner@127.0.0.1:5432/listing)',
    );
    process.exit(2);
  }
  const result = await migrate({ connectionString: url, directory: MIGRATIONS_DIR, log: console.log });
  console.log(
    `migrations: ${result.applied.length} applied, ${result.alreadyApplied.length} already applied`,
  );
}

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
