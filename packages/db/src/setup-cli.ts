import { Client } from 'pg';
import { migrate } from './migrator';
import { MIGRATIONS_DIR } from './paths';
import {
  AGENT_ROLE,
  APP_ROLE,
  OWNER_ROLE,
  databaseName,
  ensureDatabase,
  dropAgentAppMembership,
  ensureRoles,
  withCredentials,
} from './roles';

/**
 * `pnpm db:setup`: as a superuser (ADMIN_DATABASE_URL), create the roles (passwords from
 * DATABASE_URL, OUTBOX_DATABASE_URL and OWNER_DATABASE_PASSWORD; the role name when absent) and
 * the database named by DATABASE_URL, then migrate it as the owner. Idempotent; used by the quick start and CI.
 */
async function main() {
  const adminUrl = process.env.ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const appUrl = process.env.DATABASE_URL ?? 'postgres://app_user:app_user@127.0.0.1:5432/listing';
  const agentUrl = process.env.OUTBOX_DATABASE_URL;
  const given = {
    owner: process.env.OWNER_DATABASE_PASSWORD,
    app: process.env.DATABASE_URL && decodeURIComponent(new URL(appUrl).password),
    agent: agentUrl && decodeURIComponent(new URL(agentUrl).password),
  };
  // The fallbacks are public development passwords, and an existing role gets the password given
  // here: in production a forgotten variable, or a URL without a password, must not reset a role
  // to one of them.
  if (process.env.NODE_ENV === 'production') {
    const missing = [
      !given.app && 'DATABASE_URL (with a password)',
      !given.agent && 'OUTBOX_DATABASE_URL (with a password)',
      !given.owner && 'OWNER_DATABASE_PASSWORD',
    ].filter(Boolean);
    if (missing.length)
      throw new Error(`NODE_ENV=production needs ${missing.join(', ')}: no default passwords`);
  }
  const ownerPassword = given.owner || OWNER_ROLE;
  const appPassword = given.app || APP_ROLE;
  const agentPassword = given.agent || AGENT_ROLE;
  const name = databaseName(appUrl);

  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await ensureRoles(admin, { owner: ownerPassword, app: appPassword, agent: agentPassword });
    const created = await ensureDatabase(admin, name);
    console.log(`database ${name}: ${created ? 'created' : 'exists'}`);
  } finally {
    await admin.end();
  }
  const ownerUrl = process.env.MIGRATION_DATABASE_URL ?? withCredentials(appUrl, OWNER_ROLE, ownerPassword);
  const result = await migrate({ connectionString: ownerUrl, directory: MIGRATIONS_DIR, log: console.log });
  console.log(
    `migrations: ${result.applied.length} applied, ${result.alreadyApplied.length} already applied`,
  );
  // Only now that sql/017 granted the agent its own privileges (running workers keep access).
  const after = new Client({ connectionString: adminUrl });
  await after.connect();
  try {
    if (await dropAgentAppMembership(after)) console.log(`${AGENT_ROLE}: no longer a member of ${APP_ROLE}`);
  } finally {
    await after.end();
  }
}

main().catch((error: unknown) => {
  console.error(`db:setup failed: ${(error as Error).message}`);
  process.exit(1);
});
