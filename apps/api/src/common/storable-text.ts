/**
 * Text PostgreSQL can store. JSON (and so every request body and provider answer) may carry a NUL
 * character or a lone UTF-16 surrogate; `text` and `jsonb` refuse both. Client input is refused
 * (ZodValidationPipe); text from a provider is repaired with storableText() before it is stored.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

export function isStorable(text: string): boolean {
  return !text.includes('\0') && !LONE_SURROGATE.test(text);
}

/**
 * `text` without NULs, lone surrogates replaced by U+FFFD, cut to at most `maxUnits` UTF-16 units
 * (the unit zod's max() and JavaScript's length count) without splitting a surrogate pair.
 */
export function storableText(text: string, maxUnits: number): string {
  const clean = text.replace(/\0/g, '').replace(LONE_SURROGATES, '\uFFFD');
  if (clean.length <= maxUnits) return clean;
  const cut = clean.slice(0, maxUnits);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** A provider's JSON made storable: every string (and key) through storableText(…, maxUnits). */
export function storableJson(value: unknown, maxUnits: number): unknown {
  if (typeof value === 'string') return storableText(value, maxUnits);
  if (Array.isArray(value)) return value.map((v) => storableJson(v, maxUnits));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [storableText(k, maxUnits), storableJson(v, maxUnits)]),
  );
}
