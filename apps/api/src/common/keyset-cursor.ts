import { ValidationFailedError } from './domain-errors';

/** Opaque keyset cursors over (createdAt, id), newest first. */
export function encodeKeysetCursor(item: { id: string; createdAt: string }): string {
  return Buffer.from(JSON.stringify({ id: item.id, at: item.createdAt })).toString('base64url');
}

export function decodeKeysetCursor(cursor: string): { createdAt: string; id: string } {
  try {
    const { id, at } = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { id: string; at: string };
    if (
      typeof id !== 'string' ||
      !/^[0-9a-f-]{36}$/i.test(id) ||
      typeof at !== 'string' ||
      Number.isNaN(Date.parse(at))
    ) {
      throw new Error('shape');
    }
    return { id, createdAt: at };
  } catch {
    throw new ValidationFailedError([{ path: 'cursor', message: 'invalid cursor' }]);
  }
}

export async function keysetPage<T extends { id: string; createdAt: string }>(
  limit: number,
  cursor: string | undefined,
  fetch: (limit: number, after?: { createdAt: string; id: string }) => Promise<T[]>,
): Promise<{ items: T[]; nextCursor: string | null }> {
  const items = await fetch(limit + 1, cursor ? decodeKeysetCursor(cursor) : undefined);
  const page = items.slice(0, limit);
  const last = page.at(-1);
  return { items: page, nextCursor: items.length > limit && last ? encodeKeysetCursor(last) : null };
}
