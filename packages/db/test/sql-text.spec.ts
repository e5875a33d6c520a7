import {
  sqlInt,
  sqlJsonb,
  sqlLiteral,
  sqlParam,
  sqlText,
  sqlTimestamptz,
  sqlUuid,
  sqlUuidArray,
  type Database,
  type SqlText,
} from '@listing/db';

const ID = '0190c8e4-7b1e-7000-8000-000000000001';

describe('SqlText: escaped SQL for the simple-protocol paths', () => {
  it('literals: quotes doubled; with a backslash, an E literal with backslashes doubled', () => {
    expect(sqlLiteral("it's")).toBe("'it''s'");
    expect(sqlLiteral('a\\b')).toBe(" E'a\\\\b'");
    expect(sqlLiteral("'; drop table users; --")).toBe("'''; drop table users; --'");
    expect(() => sqlLiteral('a\0b')).toThrow(RangeError);
    expect(() => sqlLiteral(42 as unknown as string)).toThrow(TypeError);
  });

  it('uuids and uuid arrays are validated, never escaped', () => {
    expect(sqlUuid(ID)).toBe(`'${ID}'::uuid`);
    expect(sqlUuidArray([ID, ID])).toBe(`'{${ID},${ID}}'::uuid[]`);
    expect(sqlUuidArray([])).toBe(`'{}'::uuid[]`);
    expect(() => sqlUuid("x'::uuid; --")).toThrow(RangeError);
    expect(() => sqlUuidArray([ID, 'nope'])).toThrow(RangeError);
  });

  it('integers are safe integers; a negative one cannot start a comment', () => {
    expect(sqlInt(42)).toBe('42');
    expect(sqlInt(-1)).toBe('(-1)');
    expect(sqlText`select 1 -${sqlInt(-1)}`).toBe('select 1 -(-1)');
    for (const bad of [1.5, NaN, Infinity, 2 ** 53]) expect(() => sqlInt(bad)).toThrow(RangeError);
  });

  it('jsonb and timestamptz', () => {
    expect(sqlJsonb({ a: "it's" })).toBe(`'{"a":"it''s"}'::jsonb`);
    expect(sqlJsonb({ path: 'C:\\x' })).toBe(` E'{"path":"C:\\\\\\\\x"}'::jsonb`);
    expect(() => sqlJsonb(undefined)).toThrow(TypeError);
    expect(sqlTimestamptz(new Date(0))).toBe(`'1970-01-01T00:00:00.000Z'::timestamptz`);
    expect(() => sqlTimestamptz(new Date(NaN))).toThrow(RangeError);
  });

  it('parameter values: escaped strings, finite numbers, booleans, null, bytea hex, instants', () => {
    expect(sqlParam("it's")).toBe("'it''s'");
    expect(sqlParam(-3)).toBe("'-3'");
    expect(sqlParam(1.5)).toBe("'1.5'");
    expect(sqlParam(false)).toBe('false');
    expect(sqlParam(null)).toBe('NULL');
    expect(sqlParam(Buffer.from([0, 255]))).toBe(" E'\\\\x00ff'");
    expect(sqlParam(new Date('2024-01-02T03:04:05.678Z'))).toBe("'2024-01-02T03:04:05.678Z'");
    expect(() => sqlParam(Number.NaN)).toThrow(RangeError);
    expect(() => sqlParam(new Date('nope'))).toThrow(RangeError);
    expect(() => sqlParam({} as unknown as string)).toThrow(TypeError);
  });

  it('the tag takes only SqlText interpolations, and only as a tag', () => {
    const text: SqlText = sqlText`select ${sqlInt(1)}, ${sqlLiteral('x')}`;
    expect(text).toBe("select 1, 'x'");
    const input = "'; drop table users; --";
    // @ts-expect-error a plain string is not SqlText
    expect(sqlText`select ${input}`).toBe(`select ${input}`); // (the brand is a compile-time check)
    const forged = Object.assign([input], { raw: [input] }) as unknown as TemplateStringsArray;
    expect(() => sqlText(forged)).toThrow(TypeError);
  });

  it('the simple-protocol paths of Database refuse a plain string at compile time', () => {
    // Type-level only (never run): `pnpm typecheck` fails if a plain string is accepted.
    const refused = (db: Database, statement: string) => {
      // @ts-expect-error statements are SqlText
      void db.queryInWorkspaces([{ workspaceId: ID, statement }]);
      // @ts-expect-error statements are SqlText
      db.executeAtCommit(statement);
    };
    expect(typeof refused).toBe('function');
  });
});
