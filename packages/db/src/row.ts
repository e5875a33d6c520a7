import type { Column, Table } from 'drizzle-orm';

/**
 * Column types the driver hands back as text through `executor.execute(sql\`...\`)`: Drizzle's
 * node-postgres session turns off pg's date parsers (it maps them itself, but only for its query
 * builder), and pg never parses int8 or numeric.
 */
type TextOnTheWire =
  | 'PgTimestamp'
  | 'PgTimestampString'
  | 'PgDate'
  | 'PgDateString'
  | 'PgTime'
  | 'PgInterval'
  | 'PgBigInt53'
  | 'PgBigInt64'
  | 'PgBigSerial53'
  | 'PgBigSerial64'
  | 'PgNumeric'
  | 'PgNumericNumber'
  | 'PgNumericBigInt';

type WireValue<C extends Column> =
  | (C['_']['columnType'] extends TextOnTheWire ? string : C['_']['data'])
  | (C['_']['notNull'] extends true ? never : null);

/**
 * A row of `table` as a `sql` template query returns it (`db.executor.execute<...>(sql\`select
 * ...\`)`): keyed by the SQL column names (snake_case, not the schema's property names), each
 * value as the driver delivers it (timestamps, int8 and numeric as strings; jsonb parsed, as
 * `unknown`). The Drizzle tables of ./schema are the one description of the columns; a
 * repository's row type is `Pick<SqlRow<typeof table>, ...>`, with jsonb columns narrowed by an
 * intersection (`& { payload: Payload }`) and computed columns added the same way.
 */
export type SqlRow<T extends Table> = {
  [K in keyof T['_']['columns'] as T['_']['columns'][K]['_']['name']]: WireValue<T['_']['columns'][K]>;
};
