import { is } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import * as schema from '@listing/db';
import { useTestDatabase } from '@listing/testing';

const t = useTestDatabase();

/** One comparable line per fact, so a drift shows as a readable diff of two sorted lists. */
interface Facts {
  columns: string[];
  keys: string[];
  enums: string[];
}

const drizzleTables: PgTable[] = (Object.values(schema) as unknown[]).filter((value): value is PgTable =>
  is(value, PgTable),
);

function drizzleFacts(table: PgTable): Facts {
  const config = getTableConfig(table);
  const single = config.columns.filter((c) => c.primary).map((c) => c.name);
  const primary = single.length ? single : (config.primaryKeys[0]?.columns.map((c) => c.name) ?? []);
  return {
    columns: config.columns
      .map(
        (c) =>
          `${c.name} ${c.getSQLType()} ${c.notNull ? 'not null' : 'null'}${c.hasDefault ? ' default' : ''}`,
      )
      .sort(),
    keys: [
      `primary (${primary.join(', ')})`,
      ...config.uniqueConstraints.map((u) => `unique (${u.columns.map((c) => c.name).join(', ')})`),
    ].sort(),
    enums: config.columns
      .filter((c) => 'enumValues' in c && Array.isArray(c.enumValues) && c.enumValues.length)
      .map((c) => `${c.name} in (${[...(c as { enumValues: string[] }).enumValues].sort().join(', ')})`)
      .sort(),
  };
}

async function databaseFacts(table: string): Promise<Facts> {
  const columns = await t.owner.query<{ line: string }>(
    `select column_name || ' ' || data_type || ' ' || case is_nullable when 'NO' then 'not null' else 'null' end
            || case when column_default is null then '' else ' default' end as line
       from information_schema.columns where table_schema = 'public' and table_name = $1`,
    [table],
  );
  const constraints = await t.owner.query<{ contype: string; def: string }>(
    `select contype, pg_get_constraintdef(oid) as def from pg_constraint
      where conrelid = ('public.' || $1)::regclass and contype in ('p', 'u', 'c')`,
    [table],
  );
  const keys: string[] = [];
  const enums: string[] = [];
  for (const { contype, def } of constraints.rows) {
    if (contype === 'p') keys.push(def.replace('PRIMARY KEY', 'primary'));
    if (contype === 'u') keys.push(def.replace('UNIQUE', 'unique'));
    // A closed set of values: `CHECK ((col = ANY (ARRAY['a'::text, …])))` or `CHECK ((col = 'a'::text))`.
    const closed = /^CHECK \(\((\w+) = (?:ANY \(ARRAY\[(.*)\]\)|('[^']*'::text))\)\)$/.exec(def);
    if (closed) {
      const values = [...(closed[2] ?? closed[3]!).matchAll(/'([^']*)'::text/g)].map((m) => m[1]!);
      enums.push(`${closed[1]} in (${values.sort().join(', ')})`);
    }
  }
  return { columns: columns.rows.map((r) => r.line).sort(), keys: keys.sort(), enums: enums.sort() };
}

/**
 * The SQL migrations are the source of truth; the Drizzle schema is their typed description. This
 * keeps the two in step: every table, column, type, nullability, default, key and closed value set.
 */
describe('Drizzle schema against the migrated database', () => {
  it('describes every table the migrations create, and no other', async () => {
    const { rows } = await t.owner.query<{ table_name: string }>(
      `select table_name from information_schema.tables
        where table_schema = 'public' and table_type = 'BASE TABLE' and table_name <> 'schema_migrations'`,
    );
    const described = drizzleTables.map((table) => getTableConfig(table).name).sort();
    expect(described).toEqual(rows.map((r) => r.table_name).sort());
  });

  it.each(drizzleTables.map((table) => [getTableConfig(table).name, table] as const))(
    '%s matches its migrations',
    async (name, table) => {
      expect(drizzleFacts(table)).toEqual(await databaseFacts(name));
    },
  );
});

/**
 * PostgreSQL 15 inlines no SQL-language function that is SECURITY DEFINER or has a SET clause,
 * and plans such a function's body again on every call; plpgsql keeps the plans for the session
 * (sql/027). Those on a per-request, per-row or per-round path must be plpgsql: app_authenticate
 * runs on every authenticated request.
 */
describe('SECURITY DEFINER functions', () => {
  // Maintenance and operator reads, called rarely, each call doing batch work; app_member_role is
  // no longer app_user's to call (sql/024).
  const rarelyCalled = [
    'app_delete_expired_idempotency',
    'app_member_role',
    'outbox_dead_letters',
    'outbox_dispatched_since',
    'outbox_purge_dispatched',
    'outbox_purge_inbox',
    'outbox_stats',
    'outbox_unhandled_dead_letter_workspaces',
  ];

  it('are plpgsql, but for the rarely called ones', async () => {
    const { rows } = await t.owner.query<{ proname: string; lanname: string }>(
      `select p.proname, l.lanname from pg_proc p
         join pg_namespace n on n.oid = p.pronamespace join pg_language l on l.oid = p.prolang
        where n.nspname = 'public' and p.prosecdef`,
    );
    const sql = rows.filter((r) => r.lanname === 'sql').map((r) => r.proname);
    expect(sql.sort()).toEqual(rarelyCalled);
    expect(rows.map((r) => r.proname)).toContain('app_authenticate');
  });
});
