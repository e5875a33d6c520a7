import { randomUUID } from 'node:crypto';
import {
  media,
  sql,
  sqlInt,
  sqlJsonb,
  sqlLiteral,
  sqlParam,
  sqlText,
  sqlTimestamptz,
  sqlUuid,
  sqlUuidArray,
  type SqlRow,
} from '@listing/db';
import { seedWorkspace, useTestDatabase } from '@listing/testing';

const t = useTestDatabase();

const NASTY = [
  "it's",
  'back\\slash',
  "\\'; select 1; --",
  "E'x'",
  '$$ dollar $$',
  '/* comment',
  '-- comment',
  'line\nbreak\ttab',
  'émoji 🚀 and 中文',
  '',
];

describe('SqlText against the server', () => {
  let ws: { workspaceId: string; userId: string };
  beforeAll(async () => {
    ws = await seedWorkspace(t.owner);
  });

  it('every literal reads back as the string it escaped, whatever standard_conforming_strings is', async () => {
    for (const conforming of ['on', 'off']) {
      const client = await t.db.pool.connect();
      try {
        await client.query(`SET standard_conforming_strings = ${conforming}`);
        const text = NASTY.map((s, i) => sqlText`${sqlLiteral(s)} AS v${sqlInt(i)}`).join(', ');
        const { rows } = await client.query(`SELECT ${text}`);
        expect(Object.values(rows[0] as object)).toEqual(NASTY);
      } finally {
        await client.query('RESET standard_conforming_strings');
        client.release();
      }
    }
  });

  it('jsonb, uuids, arrays and instants through queryInWorkspaces', async () => {
    const payload = { quote: "it's", slash: 'a\\b', nested: { list: [1, null, 'x'] } };
    const at = new Date('2024-02-29T12:34:56.789Z');
    const ids = [randomUUID(), randomUUID()];
    const [rows] = await t.db.queryInWorkspaces<{ j: unknown; u: string; a: string[]; at: Date; n: number }>([
      {
        workspaceId: ws.workspaceId,
        statement: sqlText`SELECT ${sqlJsonb(payload)} AS j, ${sqlUuid(ids[0]!)} AS u,
                                  ${sqlUuidArray(ids)}::text[] AS a, ${sqlTimestamptz(at)} AS at, ${sqlInt(-7)} AS n`,
      },
    ]);
    expect(rows![0]).toEqual({ j: payload, u: ids[0], a: ids, at, n: -7 });
  });

  it('sqlParam values read back as the parameters they stand for, through PREPARE and EXECUTE', async () => {
    const bytes = Buffer.from([0, 1, 92, 39, 255]); // NUL, a backslash and a quote among them
    const at = new Date('2024-02-29T12:34:56.789Z');
    const values = [...NASTY, -7, 2.5, true, null, bytes, at] as const;
    const types = [...NASTY.map(() => 'text'), 'int', 'float8', 'bool', 'text', 'bytea', 'timestamptz'];
    const client = await t.db.pool.connect();
    try {
      await client.query(
        `PREPARE sql_param_probe AS SELECT ${types.map((ty, i) => `$${i + 1}::${ty} AS v${i}`).join(', ')}`,
      );
      const { rows } = await client.query(`EXECUTE sql_param_probe(${values.map(sqlParam).join(', ')})`);
      expect(Object.values(rows[0] as object)).toEqual([...values]);
      // A number that is no integer is refused by an integer parameter, as the parameter itself
      // is, never rounded into it.
      await client.query('PREPARE sql_param_probe_int AS SELECT $1::int AS n');
      const outcome = (query: Promise<{ rows: unknown[] }>) =>
        query.then(
          (r) => r.rows[0],
          (e: { code?: string }) => e.code,
        );
      expect(await outcome(client.query('SELECT $1::int AS n', [2.5]))).toBe('22P02');
      expect(await outcome(client.query(`EXECUTE sql_param_probe_int(${sqlParam(2.5)})`))).toBe('22P02');
      expect(await outcome(client.query(`EXECUTE sql_param_probe_int(${sqlParam(-7)})`))).toEqual({ n: -7 });
    } finally {
      await client.query('DEALLOCATE ALL');
      client.release();
    }
  });

  it('SqlRow is what a sql template query returns: column names, timestamps and int8 as text', async () => {
    const id = randomUUID();
    await t.owner.query(
      `insert into media (workspace_id, id, filename, content_type, declared_size, original_key)
       values ($1, $2, 'a.png', 'image/png', 12345678901, 'k')`,
      [ws.workspaceId, id],
    );
    const row = await t.db.withWorkspace(ws.workspaceId, async () => {
      const { rows } = await t.db.executor.execute<SqlRow<typeof media>>(
        sql`select * from media where id = ${id}`,
      );
      return rows[0]!;
    });
    const expected: Partial<SqlRow<typeof media>> = {
      id,
      workspace_id: ws.workspaceId,
      status: 'awaiting_content',
      content_type: 'image/png',
      declared_size: '12345678901',
      width: null,
    };
    expect(row).toMatchObject(expected);
    expect(typeof row.created_at).toBe('string');
    expect(new Date(row.created_at).getTime()).not.toBeNaN();
    expect(row.completed_at).toBeNull();
  });
});
