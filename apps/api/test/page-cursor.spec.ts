import { randomUUID } from 'node:crypto';
import {
  decodeCursor,
  decodeKeyCursor,
  decodeRevisionCursor,
  encodeCursor,
  encodeKeyCursor,
  encodeRevisionCursor,
  toPageBy,
} from '../src/common/page-cursor';
import { ValidationFailedError } from '../src/common/domain-errors';
import { pageQuerySchema } from '../src/common/page-query';

const crafted = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('list cursors', () => {
  it('round-trips the positions the API hands out', () => {
    const position = { createdAt: new Date().toISOString(), id: randomUUID() };
    expect(decodeCursor(encodeCursor(position))).toEqual(position);
    expect(decodeCursor(undefined)).toBeUndefined();
  });

  it('re-serializes an offset time to the UTC form compared in SQL', () => {
    const id = randomUUID();
    expect(decodeCursor(crafted({ at: '2026-11-30T06:00:00.123456+01:00', id }))).toEqual({
      createdAt: '2026-11-30T05:00:00.123Z',
      id,
    });
  });

  it.each([
    ['a bare number as time', { at: '1', id: randomUUID() }],
    ['a date without time', { at: '2026-11-30', id: randomUUID() }],
    ['an impossible month', { at: '2026-13-01T00:00:00Z', id: randomUUID() }],
    ['year 0', { at: '0000-01-01T00:00:00Z', id: randomUUID() }],
    ['an instant past year 9999', { at: '9999-12-31T23:59:59-01:00', id: randomUUID() }],
    ['36 hyphens as id', { at: new Date().toISOString(), id: '-'.repeat(36) }],
    ['an id that is not a UUID', { at: new Date().toISOString(), id: 'g'.repeat(36) }],
    ['a number as id', { at: new Date().toISOString(), id: 7 }],
    ['no object at all', 'x'],
  ])('refuses %s with VALIDATION_FAILED', (_, value) => {
    expect(() => decodeCursor(crafted(value))).toThrow(ValidationFailedError);
  });

  it('every key cursor the API hands out is one a list query accepts back', () => {
    // Platform product ids reach 200 units; JSON escapes control characters to six bytes, and a
    // CJK character takes three bytes of UTF-8.
    for (const key of ['p'.repeat(200), '\u0001'.repeat(200), '商'.repeat(200), '😀'.repeat(100)]) {
      const cursor = encodeKeyCursor(key);
      expect(pageQuerySchema.safeParse({ cursor }).success).toBe(true);
      expect(decodeKeyCursor(cursor)).toBe(key);
    }
  });

  it('a key cursor holding a NUL (which PostgreSQL text refuses) is a 422', () => {
    expect(() => decodeKeyCursor(crafted({ k: 'a\u0000b' }))).toThrow(ValidationFailedError);
    expect(decodeKeyCursor(crafted({ k: 'prd_1' }))).toBe('prd_1');
  });

  it('refuses text that is not base64url JSON', () => {
    expect(() => decodeCursor('nonsense')).toThrow(ValidationFailedError);
  });

  it('a revision cursor round-trips, and anything but a revision number is a 422', () => {
    expect(decodeRevisionCursor(encodeRevisionCursor(7))).toBe(7);
    expect(decodeRevisionCursor(undefined)).toBeUndefined();
    for (const r of [0, -1, 1.5, 2_147_483_648, '3', null]) {
      expect(() => decodeRevisionCursor(crafted({ r }))).toThrow(ValidationFailedError);
    }
    expect(() => decodeRevisionCursor(crafted({ k: 3 }))).toThrow(ValidationFailedError);
  });

  it('a page by any key: the next cursor names its last row, none on the last page', () => {
    const rows = [5, 4, 3];
    expect(toPageBy(rows, 2, (r) => `after-${r}`)).toEqual({ items: [5, 4], nextCursor: 'after-4' });
    expect(toPageBy(rows, 3, (r) => `after-${r}`)).toEqual({ items: rows, nextCursor: null });
    expect(toPageBy([], 3, (r) => `after-${r}`)).toEqual({ items: [], nextCursor: null });
  });
});
