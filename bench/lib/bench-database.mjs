/**
 * A throwaway database for the small benchmarks (cycle-cost, writer-cost): dropped and set up
 * with the project's migrations (packages/db/dist/setup-cli.js, so `pnpm run build` first), ten
 * workspaces seeded as the owner, dropped again at the end.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ADMIN = process.env.ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * BENCH_DATABASE_URL, else `postgres://app_user:app_user@127.0.0.1:5432/<defaultName>`; the name
 * must contain `bench` (it is dropped). Returns the app URL, a URL for another role (its password
 * is its name, as setup-cli makes them), the owner pool (`max` connections), the seeded workspace
 * ids, and drop().
 */
export async function createBenchDatabase(defaultName, { max = 2, workspaces: n = 10 } = {}) {
  const appUrl =
    process.env.BENCH_DATABASE_URL ?? `postgres://app_user:app_user@127.0.0.1:5432/${defaultName}`;
  const name = new URL(appUrl).pathname.slice(1);
  if (!/bench/.test(name)) throw new Error(`refusing to drop ${name}: the name must contain "bench"`);
  const asRole = (role) => Object.assign(new URL(appUrl), { username: role, password: role }).toString();
  const drop = async () => {
    const admin = new pg.Client({ connectionString: ADMIN });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  };
  await drop();
  execFileSync(process.execPath, [path.join(root, 'packages/db/dist/setup-cli.js')], {
    env: { ...process.env, ADMIN_DATABASE_URL: ADMIN, DATABASE_URL: appUrl },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const owner = new pg.Pool({ connectionString: asRole('listing_owner'), max });
  const user = randomUUID();
  await owner.query(`insert into users (id, email, password_hash) values ($1, $2, 'x')`, [
    user,
    `${user}@b.test`,
  ]);
  const workspaces = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    await owner.query(`insert into workspaces (id, name, created_by) values ($1, $2, $3)`, [
      id,
      `w${i}`,
      user,
    ]);
    workspaces.push(id);
  }
  return { appUrl, asRole, owner, workspaces, drop };
}
