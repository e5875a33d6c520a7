import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Pool } from 'pg';
import { Database, PreparedStatementsBehindPoolerError, sharesServerConnections } from '@listing/db';
import { seedWorkspace, startPgBouncer, useTestDatabase, type RunningPgBouncer } from '@listing/testing';

const t = useTestDatabase();
jest.setTimeout(120_000);

/** What one probe saw that it must not have. */
interface Violation {
  kind: 'foreign rows' | 'unbound rows' | 'setting survived';
  detail: string;
}

/** A way of running "bound to workspace W, read the outbox rows" and "unbound, read the setting". */
interface Binder {
  bound(workspaceId: string, fail: boolean): Promise<string[]>;
  unbound(): Promise<{ setting: string | null; rows: number }>;
}

/**
 * Many concurrent requests of two workspaces through PgBouncer in transaction mode with a server
 * pool of 2, so every server connection serves both tenants in turn; a third of the bound
 * transactions fail on purpose after reading. Bound reads must only see their workspace's rows;
 * unbound reads must see no setting and, under RLS, no row.
 */
async function probe(binder: Binder, workspaces: string[], rounds: number): Promise<Violation[]> {
  const violations: Violation[] = [];
  await Promise.all(
    Array.from({ length: rounds }, async (_, i) => {
      const ws = workspaces[i % workspaces.length]!;
      const fail = i % 3 === 0;
      try {
        const seen = await binder.bound(ws, fail);
        const foreign = seen.filter((w) => w !== ws);
        if (foreign.length) violations.push({ kind: 'foreign rows', detail: `${ws} saw ${foreign[0]}` });
      } catch (error) {
        if (!fail) throw error;
      }
      const { setting, rows } = await binder.unbound();
      if (setting) violations.push({ kind: 'setting survived', detail: setting });
      if (rows) violations.push({ kind: 'unbound rows', detail: `${rows} rows` });
    }),
  );
  return violations;
}

describe('tenant isolation through PgBouncer in transaction mode', () => {
  let bouncer: RunningPgBouncer;
  let db: Database;
  let workspaces: string[];

  beforeAll(async () => {
    bouncer = await startPgBouncer({ serverUrl: t.info.adminUrl, poolSize: 2 });
    db = new Database({
      connectionString: bouncer.via(t.info.appUrl),
      max: 20,
      preparedStatements: false,
      applicationName: 'pooling-test',
    });
    workspaces = [];
    for (const name of ['A', 'B']) {
      const { workspaceId } = await seedWorkspace(t.owner, name);
      workspaces.push(workspaceId);
      for (let i = 0; i < 3; i++) {
        await t.owner.query(
          `insert into outbox_events (id, workspace_id, queue, event_type, payload) values ($1, $2, 'q', 'e', '{}')`,
          [randomUUID(), workspaceId],
        );
      }
    }
  });
  afterAll(async () => {
    await db?.close();
    await bouncer?.stop();
  });

  it('runs through the pooler on shared server connections (the premise of the test)', async () => {
    const seen = await db.withWorkspace(workspaces[0]!, () =>
      db.executor.execute<{ user: string; port: number }>(
        sql`select current_user as user, inet_server_port() as port`,
      ),
    );
    expect(seen.rows[0]).toMatchObject({ user: 'app_user', port: 5432 });
    const pools = await bouncer.show('POOLS');
    expect(pools.some((p) => p.user === 'app_user' && p.database === t.info.name)).toBe(true);
  });

  it("never shows a request the other workspace's rows, and no setting outlives its transaction", async () => {
    const binder: Binder = {
      bound: (ws, fail) =>
        db.withWorkspace(ws, async () => {
          const { rows } = await db.executor.execute<{ workspace_id: string }>(
            sql`select workspace_id from outbox_events`,
          );
          if (fail) throw new Error('deliberate failure after reading');
          return rows.map((r) => r.workspace_id);
        }),
      unbound: async () => {
        const { rows } = await db.executor.execute<{ setting: string | null; rows: number }>(
          sql`select nullif(current_setting('app.workspace_id', true), '') as setting,
                     (select count(*)::int from outbox_events) as rows`,
        );
        return rows[0]!;
      },
    };
    expect(await probe(binder, workspaces, 400)).toEqual([]);
    // The server pool stayed at its 2 connections: both tenants really shared them.
    const servers = (await bouncer.show('SERVERS')).filter((s) => s.user === 'app_user');
    expect(servers.length).toBeLessThanOrEqual(2);
  });

  it('catches a binding made at session level (the broken fixture the probe must fail on)', async () => {
    // A deliberately wrong binder: set_config(..., false) outlives the transaction on the server
    // connection, which the pooler then hands to the next client, of any tenant.
    const pool = new Pool({ connectionString: bouncer.via(t.info.appUrl), max: 20 });
    const broken: Binder = {
      bound: async (ws, fail) => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query(`select set_config('app.workspace_id', $1, false)`, [ws]);
          const { rows } = await client.query<{ workspace_id: string }>(
            'select workspace_id from outbox_events',
          );
          if (fail) throw new Error('deliberate failure after reading');
          await client.query('COMMIT');
          return rows.map((r) => r.workspace_id);
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        } finally {
          client.release();
        }
      },
      unbound: async () =>
        (
          await pool.query<{ setting: string | null; rows: number }>(
            `select nullif(current_setting('app.workspace_id', true), '') as setting,
                    (select count(*)::int from outbox_events) as rows`,
          )
        ).rows[0]!,
    };
    try {
      const violations = await probe(broken, workspaces, 200);
      expect(violations.some((v) => v.kind === 'setting survived')).toBe(true);
      expect(violations.some((v) => v.kind === 'unbound rows')).toBe(true);
    } finally {
      await pool.end();
    }
  });

  it('runs the prepared hot path unnamed, so another server connection never misses it', async () => {
    const named = new Database({
      connectionString: bouncer.via(t.info.appUrl),
      max: 8,
      preparedStatements: true,
    });
    const run = (d: Database) =>
      Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          d.withWorkspace(workspaces[i % 2]!, async () => {
            // Not the first statement: that one travels with BEGIN (EXECUTE of a statement the
            // same message PREPAREs); the ones after it are protocol-level named statements.
            await d.executor.execute(sql`select 1`);
            return d.prepared<{ n: number }>(
              'pooling_probe',
              'select count(*)::int as n from outbox_events',
              [],
            );
          }),
        ),
      );
    try {
      // Named statements behind transaction pooling fail once a client's transaction lands on a
      // server connection that never parsed them: the reason for the setting.
      await expect(run(named)).rejects.toThrow(/prepared statement .* (does not exist|already exists)/);
    } finally {
      await named.close();
    }
    const counts = await run(db);
    expect(counts.every((rows) => rows[0]!.n === 3)).toBe(true);
  });

  it('tells a pooler that shares server connections from one that does not', async () => {
    expect(await sharesServerConnections({ connectionString: bouncer.via(t.info.appUrl) })).toBe(true);
    expect(await sharesServerConnections({ connectionString: t.info.appUrl })).toBe(false);
    const session = await startPgBouncer({ serverUrl: t.info.adminUrl, poolSize: 2, poolMode: 'session' });
    try {
      expect(await sharesServerConnections({ connectionString: session.via(t.info.appUrl) })).toBe(false);
    } finally {
      await session.stop();
    }
  });

  it('refuses named statements through it at start-up, and nothing else', async () => {
    const check = async (options: ConstructorParameters<typeof Database>[0]) => {
      const d = new Database(options);
      try {
        await d.checkPreparedStatements();
      } finally {
        await d.close();
      }
    };
    await expect(
      check({ connectionString: bouncer.via(t.info.appUrl), preparedStatements: true }),
    ).rejects.toThrow(PreparedStatementsBehindPoolerError);
    await expect(
      check({ connectionString: bouncer.via(t.info.appUrl), preparedStatements: false }),
    ).resolves.toBe(undefined);
    await expect(check({ connectionString: t.info.appUrl, preparedStatements: true })).resolves.toBe(
      undefined,
    );
    // Unreachable: readiness reports that; the check does not stop the start.
    const closed = new URL(t.info.appUrl);
    closed.port = '1';
    await expect(check({ connectionString: closed.toString(), preparedStatements: true })).resolves.toBe(
      undefined,
    );
  });
});
