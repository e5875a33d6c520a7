import { isoInstant } from '../src/common/iso-instant';

describe('isoInstant', () => {
  it('normalizes what PostgreSQL reads as the same instant to UTC at millisecond precision', () => {
    expect(isoInstant('2026-11-30T05:00:00Z')).toBe('2026-11-30T05:00:00.000Z');
    expect(isoInstant('2026-11-30T06:00:00.123456+01:00')).toBe('2026-11-30T05:00:00.123Z');
    expect(isoInstant('2024-02-29T00:00:00Z')).toBe('2024-02-29T00:00:00.000Z'); // a leap day
    expect(isoInstant('0001-01-01T00:00:00Z')).toBe('0001-01-01T00:00:00.000Z');
  });

  it.each([
    ['1'],
    ['2026-11-30'],
    ['2026-11-30 05:00:00Z'],
    ['2024-02-30T00:00:00Z'], // JavaScript rolls it into March
    ['2023-02-29T00:00:00Z'],
    ['2026-13-01T00:00:00Z'],
    ['0000-01-01T00:00:00Z'], // year 0: PostgreSQL has none
    ['0001-01-01T00:00:00+01:00'], // lands in year 0
    ['9999-12-31T23:59:59-01:00'], // lands in year 10000
    ['2026-11-30T24:00:00Z'],
    ['2026-11-30T05:00:00+16:00'],
  ])('refuses %s', (text) => {
    expect(isoInstant(text)).toBeUndefined();
  });
});
