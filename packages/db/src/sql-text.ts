/**
 * Complete SQL text with every value already inlined, for the few paths that must send plain
 * text over the simple query protocol: `Database.queryInWorkspaces` (many statements in one
 * message, one round trip) and `Database.executeAtCommit` (a statement riding with COMMIT). The
 * simple protocol has no parameters, so the values have to be in the text.
 *
 * The brand makes those paths refuse a plain string at compile time: a SqlText is made only by
 * the `sqlText` tag, whose interpolations must themselves be SqlText, and by the value helpers
 * below, each of which validates or escapes its value. Everything else uses the `sql` template
 * (parameters, extended protocol) and never needs these.
 */
declare const sqlTextBrand: unique symbol;
export type SqlText = string & { readonly [sqlTextBrand]: true };

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Tag for SQL text: the literal parts are code, every interpolation must be SqlText (a value
 * helper's output or another sqlText). `sqlText\`select ${sqlInt(1)}\``.
 */
export function sqlText(strings: TemplateStringsArray, ...values: SqlText[]): SqlText {
  // A template's strings array is frozen and has `raw`; an array built at run time from input
  // (and cast) usually is not. Cheap, and catches the obvious misuse.
  if (!Object.isFrozen(strings) || !Array.isArray(strings.raw)) {
    throw new TypeError('sqlText is a template tag: sqlText`...`');
  }
  let text = strings[0]!;
  for (let i = 0; i < values.length; i++) text += values[i]! + strings[i + 1]!;
  return text as SqlText;
}

/**
 * A string literal, escaped the way libpq's PQescapeLiteral does (quotes doubled; with a
 * backslash, backslashes doubled and an E'' literal, so it reads the same whatever
 * standard_conforming_strings is). A NUL is refused: PostgreSQL text cannot hold one, and in the
 * simple protocol it would end the message.
 */
export function sqlLiteral(value: string): SqlText {
  if (typeof value !== 'string') throw new TypeError('sqlLiteral expects a string');
  if (value.includes('\0')) throw new RangeError('a SQL string cannot contain NUL (\\0)');
  let escaped = value.replace(/'/g, "''");
  if (escaped.includes('\\')) escaped = ` E'${escaped.replace(/\\/g, '\\\\')}'`;
  else escaped = `'${escaped}'`;
  return escaped as SqlText;
}

/** A validated UUID, typed: `'…'::uuid`. */
export function sqlUuid(id: string): SqlText {
  if (typeof id !== 'string' || !UUID_RE.test(id)) throw new RangeError('expected a UUID');
  return `'${id}'::uuid` as SqlText;
}

/** A uuid[] of validated UUIDs: `'{…,…}'::uuid[]`. */
export function sqlUuidArray(ids: readonly string[]): SqlText {
  for (const id of ids) {
    if (typeof id !== 'string' || !UUID_RE.test(id)) throw new RangeError('expected UUIDs');
  }
  return `'{${ids.join(',')}}'::uuid[]` as SqlText;
}

/** A safe integer; a negative one in parentheses (`x -${n}` must never read as a comment). */
export function sqlInt(n: number): SqlText {
  if (!Number.isSafeInteger(n)) throw new RangeError(`expected a safe integer, got ${n}`);
  return (n < 0 ? `(${n})` : String(n)) as SqlText;
}

/** A JSON value as jsonb: `'…'::jsonb` (JSON.stringify, then escaped as a literal). */
export function sqlJsonb(value: unknown): SqlText {
  const json = JSON.stringify(value);
  if (json === undefined) throw new TypeError('sqlJsonb: the value has no JSON form');
  return `${sqlLiteral(json)}::jsonb` as SqlText;
}

/**
 * A parameter value as an untyped literal, for `EXECUTE name(…)` of a statement prepared with
 * `$n` parameters (PostgreSQL casts each literal to the parameter's type): a string escaped as
 * `sqlLiteral`, a finite number, a boolean, null, a Buffer as bytea hex, a Date exact to the
 * millisecond. Anything else is refused. A number goes quoted, as the text a parameter would
 * carry: a bare `2.5` is numeric, which EXECUTE would round into an integer parameter, where the
 * parameter itself is refused.
 */
export function sqlParam(value: string | number | boolean | Buffer | Date | null): SqlText {
  if (value === null) return 'NULL' as SqlText;
  if (typeof value === 'string') return sqlLiteral(value);
  if (typeof value === 'boolean') return (value ? 'true' : 'false') as SqlText;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`expected a finite number, got ${value}`);
    return `'${value}'` as SqlText;
  }
  if (Buffer.isBuffer(value)) return sqlLiteral(`\\x${value.toString('hex')}`);
  if (value instanceof Date) return `'${value.toISOString()}'` as SqlText;
  throw new TypeError('sqlParam: unsupported value');
}

/** An instant as timestamptz, exact to the millisecond: `'…Z'::timestamptz`. */
export function sqlTimestamptz(at: Date): SqlText {
  return `'${at.toISOString()}'::timestamptz` as SqlText; // toISOString throws on an invalid Date
}
