import type { Client } from 'pg';

/**
 * The two database roles. The owner creates and owns every object and runs migrations; it
 * bypasses RLS so the narrow SECURITY DEFINER functions it owns can see across workspaces.
 * The application role owns nothing and is subject to RLS everywhere.
 */
export const OWNER_ROLE = 'listing_owner';
export const APP_ROLE = 'app_user';

export interface RolePasswords {
  owner: string;
  app: string;
}

/** Creates or corrects both roles. Needs a superuser connection. Safe to run concurrently. */
export async function ensureRoles(admin: Client, passwords: RolePasswords): Promise<void> {
  await ensureRole(admin, OWNER_ROLE, `LOGIN NOSUPERUSER BYPASSRLS NOCREATEROLE`, passwords.owner);
  await ensureRole(admin, APP_ROLE, `LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB`, passwords.app);
}

async function ensureRole(admin: Client, role: string, attributes: string, password: string) {
  const pw = admin.escapeLiteral(password);
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
