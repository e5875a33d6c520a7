import { sql, type SQL } from '@listing/db';
import { ValidationFailedError } from './domain-errors';
import { isoInstant } from './iso-instant';
import { isStorable } from './storable-text';

/** Keyset position of a list ordered by (created_at, id) newest first, at millisecond precision. */
export interface PagePosition {
  createdAt: string;
  id: string;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function encodeCursor(position: PagePosition): string {
  return Buffer.from(JSON.stringify({ at: position.createdAt, id: position.id })).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): PagePosition | undefined {
  if (!cursor) return undefined;
  try {
    const { at, id } = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as {
      at: unknown;
      id: unknown;
    };
    // Both end up in `::timestamptz` / `::uuid` casts: anything PostgreSQL could refuse is a 422
    // here, not a 500 there. The cursors we hand out are toISOString() values, at the millisecond
    // precision the lists compare.
    const createdAt = typeof at === 'string' ? isoInstant(at) : undefined;
    if (!createdAt || typeof id !== 'string' || !UUID_RE.test(id)) throw new Error('shape');
    return { createdAt, id };
  } catch {
    throw new ValidationFailedError([{ path: 'cursor', message: 'invalid cursor' }]);
  }
}

/**
 * The sort key of every newest-first list: created_at at the cursor's millisecond precision, then
 * id. Written in UTC so the expression is immutable and each table has an index on exactly it
 * (sql/019): a page is an index range, not a sort of the whole workspace.
 */
function createdMs(createdAt: SQL): SQL {
  return sql`date_trunc('milliseconds', ${createdAt} at time zone 'UTC')`;
}

/** `and (created_at, id) < cursor` for a table aliased or not; empty without a cursor. */
export function afterCursor(
  after: PagePosition | undefined,
  createdAt: SQL = sql`created_at`,
  id: SQL = sql`id`,
): SQL {
  return after
    ? sql`and (${createdMs(createdAt)}, ${id}) < ((${after.createdAt}::timestamptz at time zone 'UTC'), ${after.id}::uuid)`
    : sql``;
}

/** `order by` of the same key, newest first. */
export function pageOrder(createdAt: SQL = sql`created_at`, id: SQL = sql`id`): SQL {
  return sql`order by ${createdMs(createdAt)} desc, ${id} desc`;
}

/** Cuts a `limit + 1` fetch into a page and its next cursor. */
export function toPage<T extends { id: string; createdAt: string }>(rows: T[], limit: number) {
  return toPageBy(rows, limit, encodeCursor);
}

/** Cuts a `limit + 1` fetch into a page; the next cursor is `cursorOf` the page's last row. */
export function toPageBy<T>(
  rows: T[],
  limit: number,
  cursorOf: (last: T) => string,
): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}

/** One page newest first: fetches `limit + 1` rows after the decoded cursor (422 if it is invalid). */
export async function keysetPage<T extends { id: string; createdAt: string }>(
  limit: number,
  cursor: string | undefined,
  fetch: (limit: number, after?: PagePosition) => Promise<T[]>,
): Promise<{ items: T[]; nextCursor: string | null }> {
  return toPage(await fetch(limit + 1, decodeCursor(cursor)), limit);
}

/** Keyset cursor over one text key (e.g. a platform's product id), opaque to clients. */
export function encodeKeyCursor(key: string): string {
  return Buffer.from(JSON.stringify({ k: key })).toString('base64url');
}

export function decodeKeyCursor(cursor: string | undefined): string | undefined {
  if (!cursor) return undefined;
  try {
    const { k } = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { k: unknown };
    if (typeof k !== 'string' || k.length > 200 || !isStorable(k)) throw new Error('shape');
    return k;
  } catch {
    throw new ValidationFailedError([{ path: 'cursor', message: 'invalid cursor' }]);
  }
}

/** Keyset cursor over a record's revision number (revisions list newest first), opaque to clients. */
export function encodeRevisionCursor(revision: number): string {
  return Buffer.from(JSON.stringify({ r: revision })).toString('base64url');
}

export function decodeRevisionCursor(cursor: string | undefined): number | undefined {
  if (!cursor) return undefined;
  try {
    const { r } = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { r: unknown };
    // It ends up compared with an integer column: anything PostgreSQL could refuse is a 422 here.
    if (typeof r !== 'number' || !Number.isInteger(r) || r < 1 || r > 2_147_483_647) throw new Error('shape');
    return r;
  } catch {
    throw new ValidationFailedError([{ path: 'cursor', message: 'invalid cursor' }]);
  }
}
