import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Client } from 'pg';
import type { Database } from './database';

/**
 * The database roles. The owner creates and owns every object and runs migrations; it bypasses
 * RLS so the narrow SECURITY DEFINER functions it owns can see across workspaces. The
 * application role (the api) owns nothing and is subject to RLS everywhere. The outbox agent
 * (dispatcher, worker, operator CLI) has the application role's privileges minus the account
 * tables (users, sessions, tokens, memberships: sql/017), plus the outbox's cross-workspace
 * functions (discovery, claim, mark, dead letters, retention, lost jobs) and the writes on the
 * outbox tables (sql/012, sql/013): the api, which faces the internet, can append events but can
 * neither list another workspace's nor dispatch any; the worker, which fetches remote URLs,
 * cannot touch accounts.
 */
export const OWNER_ROLE = 'listing_owner';
export const APP_ROLE = 'app_user';
export const AGENT_ROLE = 'outbox_agent';

export interface RolePasswords {
  owner: string;
  app: string;
  agent: string;
}

/** Creates or corrects the roles. Needs a superuser connection. Safe to run concurrently. */
export async function ensureRoles(admin: Client, passwords: RolePasswords): Promise<void> {
  await ensureRole(admin, OWNER_ROLE, `LOGIN NOSUPERUSER BYPASSRLS NOCREATEROLE`, passwords.owner);
  await ensureRole(admin, APP_ROLE, `LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB`, passwords.app);
  await ensureRole(
    admin,
    AGENT_ROLE,
    `LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB INHERIT`,
    passwords.agent,
  );
}

/**
 * Drops the membership in the application role that setups before sql/017 granted the agent. Run
 * it after migrating (017 gives the agent what it needs first, so running workers never lose
 * access). Needs a superuser connection. Roles are cluster-wide: every database of the cluster
 * must be at 017 or later.
 */
export async function dropAgentAppMembership(admin: Client): Promise<boolean> {
  const member = async () =>
    (
      await admin.query(
        `select 1 from pg_auth_members m join pg_roles g on g.oid = m.roleid join pg_roles u on u.oid = m.member
          where g.rolname = $1 and u.rolname = $2`,
        [APP_ROLE, AGENT_ROLE],
      )
    ).rowCount;
  if (!(await member())) return false;
  try {
    await admin.query(`REVOKE ${APP_ROLE} FROM ${AGENT_ROLE}`);
  } catch (error) {
    if (await member()) throw error; // else a concurrent setup revoked it ("tuple concurrently updated")
  }
  return true;
}

/** True when the connection's role still inherits the application role's privileges (pre-017). */
export async function inheritsAppRole(db: Database): Promise<boolean> {
  const { rows } = await db.executor.execute<{ member: boolean }>(
    sql`select pg_has_role(current_user, ${APP_ROLE}, 'MEMBER') and current_user <> ${APP_ROLE} as member`,
  );
  return rows[0]?.member === true;
}

async function ensureRole(admin: Client, role: string, attributes: string, password: string) {
  // A verifier, never the password: PostgreSQL logs a failing statement in full, and shows a
  // running one in pg_stat_activity.
  const pw = admin.escapeLiteral(scramVerifier(password));
  try {
    await admin.query(`CREATE ROLE ${role} ${attributes} PASSWORD ${pw}`);
  } catch (error) {
    // 42710 duplicate_object: exists already (or a concurrent setup won the race).
    // 23505 unique_violation: the same race seen from pg_authid's index.
    const code = (error as { code?: string }).code;
    if (code !== '42710' && code !== '23505') throw error;
    await admin.query(`ALTER ROLE ${role} ${attributes} PASSWORD ${pw}`);
  }
}

/** Creates the database owned by the owner role when it does not exist. */
export async function ensureDatabase(admin: Client, name: string): Promise<boolean> {
  const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [name]);
  if (rowCount) return false;
  try {
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)} OWNER ${OWNER_ROLE}`);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '42P04') return false; // created concurrently
    throw error;
  }
}

/** The same server and database as `url`, as another role. */
export function withCredentials(url: string, user: string, password: string, database?: string): string {
  const u = new URL(url);
  u.username = encodeURIComponent(user);
  u.password = encodeURIComponent(password);
  if (database) u.pathname = `/${database}`;
  return u.toString();
}

export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
}

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802, RFC 7677), computed
 * here so the password itself never reaches the server; accepted in place of the password by
 * CREATE/ALTER ROLE ... PASSWORD. Hand-written: pg exports no such helper, and it is five lines
 * of standard primitives. Passwords are taken as given (this project's are ASCII): no SASLprep.
 */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();
  const storedKey = createHash('sha256').update(hmac(salted, 'Client Key')).digest();
  const serverKey = hmac(salted, 'Server Key');
  const b64 = (b: Buffer) => b.toString('base64');
  return `SCRAM-SHA-256$${iterations}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}
