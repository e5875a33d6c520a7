const ISO_INSTANT_RE =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/;

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate();

/**
 * An RFC 3339 instant (`2026-11-30T05:00:00.123+01:00`) that PostgreSQL's timestamptz reads as the
 * same instant, as UTC ISO text at millisecond precision; undefined for anything else. Date.parse
 * alone is no check: it takes "1", rolls 2024-02-30 over into March and accepts year 0, which
 * PostgreSQL refuses (a 500 where a 422 or "unknown" was meant).
 */
export function isoInstant(text: string): string | undefined {
  const m = ISO_INSTANT_RE.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const offsetHours = m[7] === undefined ? 0 : Number(m[7]);
  const offsetMinutes = m[8] === undefined ? 0 : Number(m[8]);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 15 || offsetMinutes > 59) return undefined;
  const utc = new Date(text);
  if (Number.isNaN(utc.getTime())) return undefined;
  const iso = utc.toISOString();
  // The offset may carry the instant out of years 1..9999 ("+010000-…", "0000-…").
  return /^\d{4}-/.test(iso) && !iso.startsWith('0000') ? iso : undefined;
}
