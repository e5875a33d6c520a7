import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import {
  Database,
  isDatabaseUnavailable,
  NotInTransactionError,
  sqlLiteral,
  sqlText,
  sqlUuid,
  TransactionAbortedError,
  TransactionClosedError,
  WorkspaceContextConflictError,
} from '@listing/db';
import { CuttableProxy, freeTcpPort, seedWorkspace, sentQueries, useTestDatabase } from '@listing/testing';
import { Client } from 'pg';

const t = useTestDatabase({ poolSize: 25 });

async function txid(): Promise<string> {
  const result = await t.db.executor.execute<{ txid: string }>(sql`select txid_current()::text as txid`);
  return result.rows[0]!.txid;
}

/** A two-connection Database reaching PostgreSQL through a proxy the test can cut. */
async function behindProxy(): Promise<{ proxy: CuttableProxy; db: Database }> {
  const target = new URL(t.info.appUrl);
  const proxy = new CuttableProxy(await freeTcpPort(), {
    host: target.hostname,
    port: Number(target.port || 5432),
  });
  await proxy.open();
  return { proxy, db: new Database({ connectionString: proxy.urlThrough(t.info.appUrl), max: 2 }) };
}

describe('Database: ambient transactions on AsyncLocalStorage', () => {
  let ws: { workspaceId: string; userId: string };
  beforeAll(async () => {
    ws = await seedWorkspace(t.owner);
  });

  it('nested service calls join the outer transaction: one connection, one txid', async () => {
    const inner = () => t.db.transaction(async () => ({ txid: await txid(), pid: await backendPid() }));
    const seen = await t.db.transaction(async () => {
      const outer = { txid: await txid(), pid: await backendPid() };
      const nested = await inner();
      const deeper = await t.db.transaction(() => t.db.transaction(inner));
      // across timers and parallel branches too
      const [a, b] = await Promise.all([
        new Promise<string>((resolve) => setTimeout(() => resolve(txid()), 5)),
        txid(),
      ]);
      return { outer, nested, deeper, a, b, inTx: t.db.isInTransaction() };
    });
    expect(seen.inTx).toBe(true);
    expect(seen.nested).toEqual(seen.outer);
    expect(seen.deeper).toEqual(seen.outer);
    expect(seen.a).toBe(seen.outer.txid);
    expect(seen.b).toBe(seen.outer.txid);
    expect(t.db.isInTransaction()).toBe(false);
  });

  it('a connection dropped between two statements of a transaction fails the next one, and does not crash the process', async () => {
    const { proxy, db } = await behindProxy();
    try {
      const failure = await db
        .transaction(async () => {
          await db.executor.execute(sql`select 1`);
          await proxy.cut(); // PostgreSQL restarts while the transaction waits on something else
          await new Promise((r) => setTimeout(r, 100)); // the client sees its connection end, idle
          await db.executor.execute(sql`select 1`);
        })
        .then(
          () => null,
          (error: unknown) => error,
        );
      expect(isDatabaseUnavailable(failure)).toBe(true);
      await proxy.open();
      // The broken client was discarded, not handed out again.
      const { rows } = await db.pool.query<{ n: number }>('select 1 as n');
      expect(rows[0]!.n).toBe(1);
    } finally {
      await db.close();
      await proxy.cut();
    }
  });

  it('connectionFailedSince tells its own refused or dropped connections from other errors', async () => {
    const { proxy, db } = await behindProxy();
    const failure = (query: Promise<unknown>) =>
      query.then(
        () => null,
        (error: unknown) => error,
      );
    try {
      let since = performance.now();
      await db.executor.execute(sql`select 1`); // opens a connection, which stays idle in the pool
      expect(await failure(db.executor.execute(sql`select nope`))).not.toBeNull(); // the server answers
      expect(db.connectionFailedSince(since)).toBe(false);

      since = performance.now();
      await proxy.cut(); // drops the idle connection
      expect(await failure(db.executor.execute(sql`select 1`))).toMatchObject({
        cause: expect.objectContaining({ code: 'ECONNREFUSED' }),
      });
      expect(db.connectionFailedSince(since)).toBe(true);

      since = performance.now();
      expect(await failure(db.executor.execute(sql`select 1`))).not.toBeNull(); // refused: a connect only
      expect(db.connectionFailedSince(since)).toBe(true);

      await proxy.open();
      since = performance.now();
      await db
        .transaction(async () => {
          await db.executor.execute(sql`select 1`);
          await proxy.cut(); // drops the connection the transaction holds
          await new Promise((r) => setTimeout(r, 100));
        })
        .catch(() => undefined);
      expect(db.connectionFailedSince(since)).toBe(true);

      // Dropped under a statement in flight: pg hands the error to the statement, and the
      // ROLLBACK after it fails on the dead connection; the drop still counts.
      await proxy.open();
      since = performance.now();
      const inFlight = failure(
        db.transaction(async () => {
          await db.executor.execute(sql`select pg_sleep(2)`);
        }),
      );
      await new Promise((r) => setTimeout(r, 200));
      await proxy.cut();
      expect(await inFlight).not.toBeNull();
      expect(db.connectionFailedSince(since)).toBe(true);

      await proxy.open();
      since = performance.now();
      await db.executor.execute(sql`select 1`);
      expect(db.connectionFailedSince(since)).toBe(false);
    } finally {
      await db.close();
      await proxy.cut();
    }
  });

  it('a throw in the inner call rolls back the outer call writes', async () => {
    const keyA = randomUUID();
    const keyB = randomUUID();
    const insert = (key: string) =>
      t.db.executor.execute(sql`
        insert into idempotency_requests
          (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
        values (${ws.workspaceId}, ${ws.userId}, ${key}, 'POST /x', '\\x00'::bytea, 'k1', 'PROCESSING', now() + interval '48 hours')`);

    await expect(
      t.db.withWorkspace(ws.workspaceId, async () => {
        await insert(keyA); // outer service's write
        await t.db.transaction(async () => {
          await insert(keyB); // inner service's write
          throw new Error('inner failed');
        });
      }),
    ).rejects.toThrow('inner failed');

    const { rows } = await t.owner.query(
      'select idempotency_key from idempotency_requests where idempotency_key = any($1)',
      [[keyA, keyB]],
    );
    expect(rows).toEqual([]);
  });

  it('20 concurrent contexts each see their own transaction (no cross-talk)', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        t.db.transaction(async () => {
          const first = await txid();
          await new Promise((r) => setTimeout(r, 5 + ((i * 7) % 13)));
          const second = await t.db.transaction(() => txid());
          return { first, second };
        }),
      ),
    );
    for (const r of results) expect(r.second).toBe(r.first);
    expect(new Set(results.map((r) => r.first)).size).toBe(20);
  });

  it('work that outlives its transaction cannot use it: its connection is back in the pool', async () => {
    let leaked: Promise<unknown> | undefined;
    let leakedNested: Promise<unknown> | undefined;
    let ended!: () => void;
    const later = new Promise<void>((r) => (ended = r));
    await t.db.withWorkspace(ws.workspaceId, async () => {
      // not awaited: runs once the transaction has ended, still inside its async context
      leaked = later.then(() => t.db.executor.execute(sql`select current_setting('app.workspace_id', true)`));
      leakedNested = later.then(() => t.db.transaction(() => txid()));
      await txid();
    });
    ended();
    await expect(leaked).rejects.toBeInstanceOf(TransactionClosedError);
    await expect(leakedNested).rejects.toBeInstanceOf(TransactionClosedError);
    // the same context afterwards, awaited properly in a new transaction, works
    expect(await t.db.transaction(() => txid())).toMatch(/^\d+$/);
  });

  it('an exhausted pool fails a checkout after its bound as "database unavailable", never hangs', async () => {
    const defaults = new Database({ connectionString: t.info.appUrl });
    expect(defaults.pool.options.connectionTimeoutMillis).toBe(10_000);
    await defaults.close();
    const small = new Database({ connectionString: t.info.appUrl, max: 1, connectionTimeoutMillis: 200 });
    try {
      let release!: () => void;
      const held = small.transaction(() => new Promise<void>((r) => (release = r)));
      await new Promise((r) => setTimeout(r, 50));
      const error = await small.executor.execute(sql`select 1`).catch((e: unknown) => e);
      expect(isDatabaseUnavailable(error)).toBe(true);
      release();
      await held;
    } finally {
      await small.close();
    }
  });

  it('requireTransaction() throws a typed error outside a transaction', async () => {
    expect(() => t.db.requireTransaction('outbox append')).toThrow(NotInTransactionError);
    await t.db.transaction(async () => {
      expect(() => t.db.requireTransaction('outbox append')).not.toThrow();
    });
  });

  it('afterCommit callbacks run after COMMIT only, never on rollback', async () => {
    const events: string[] = [];
    await t.db.transaction(async () => {
      t.db.afterCommit(() => events.push('committed'));
      await t.db.transaction(async () => t.db.afterCommit(() => events.push('nested')));
      expect(events).toEqual([]); // not yet
    });
    expect(events).toEqual(['committed', 'nested']);
    await expect(
      t.db.transaction(async () => {
        t.db.afterCommit(() => events.push('rolled back'));
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(events).toEqual(['committed', 'nested']);
  });

  it('executeAtCommit statements commit with the transaction, and a failing one rolls it all back', async () => {
    const key = randomUUID();
    const insertSql = (k: string) =>
      sqlText`insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
       values (${sqlUuid(ws.workspaceId)}, ${sqlUuid(ws.userId)}, ${sqlUuid(k)}, ${sqlLiteral('POST /c')}, '\\x00', 'k1', 'PROCESSING', now() + interval '2 days')`;
    await t.db.withWorkspace(ws.workspaceId, async () => {
      t.db.executeAtCommit(insertSql(key));
      const seen = await t.db.executor.execute(
        sql`select 1 from idempotency_requests where idempotency_key = ${key}`,
      );
      expect(seen.rowCount).toBe(0); // not yet: it rides with COMMIT
    });
    expect(
      (await t.owner.query('select 1 from idempotency_requests where idempotency_key = $1', [key])).rowCount,
    ).toBe(1);

    const other = randomUUID();
    await expect(
      t.db.withWorkspace(ws.workspaceId, async () => {
        await t.db.executor.execute(sql.raw(insertSql(other)));
        t.db.executeAtCommit(sqlText`select 1/0`);
      }),
    ).rejects.toThrow(/division by zero/);
    expect(
      (await t.owner.query('select 1 from idempotency_requests where idempotency_key = $1', [other]))
        .rowCount,
    ).toBe(0);
  });

  it('queryInWorkspaces binds each statement to its own workspace, in one transaction of its own', async () => {
    const other = await seedWorkspace(t.owner, 'other');
    const rows = await t.db.queryInWorkspaces<{ ws: string; txid: string; sync: string }>(
      [ws.workspaceId, other.workspaceId].map((id) => ({
        workspaceId: id,
        statement: sqlText`select current_setting('app.workspace_id') as ws, txid_current()::text as txid,
                           current_setting('synchronous_commit') as sync`,
      })),
      { synchronousCommit: false },
    );
    expect(rows.map((r) => r[0]!.ws)).toEqual([ws.workspaceId, other.workspaceId]);
    expect(rows[0]![0]!.txid).toBe(rows[1]![0]!.txid); // one implicit transaction
    expect(rows.map((r) => r[0]!.sync)).toEqual(['off', 'off']);
    // RLS sees the bound workspace only
    const seen = await t.db.queryInWorkspaces<{ id: string }>([
      { workspaceId: other.workspaceId, statement: sqlText`select id from workspaces` },
    ]);
    expect(seen[0]!.map((r) => r.id)).toEqual([other.workspaceId]);
    // the binding ends with it: the next user of the connection has none
    const after = await t.db.pool.query(
      `select coalesce(current_setting('app.workspace_id', true), '') as ws`,
    );
    expect(after.rows[0].ws).toBe('');
  });

  it('queryInWorkspaces is all or nothing, refuses an ambient transaction and a malformed workspace id', async () => {
    const key = randomUUID();
    await expect(
      t.db.queryInWorkspaces([
        {
          workspaceId: ws.workspaceId,
          statement: sqlText`insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
                      values (${sqlUuid(ws.workspaceId)}, ${sqlUuid(ws.userId)}, ${sqlUuid(key)}, 'POST /q', '\\x00', 'k1', 'PROCESSING', now() + interval '2 days')`,
        },
        { workspaceId: ws.workspaceId, statement: sqlText`select 1/0` },
      ]),
    ).rejects.toThrow(/division by zero/);
    expect(
      (await t.owner.query('select 1 from idempotency_requests where idempotency_key = $1', [key])).rowCount,
    ).toBe(0);
    await expect(
      t.db.transaction(() =>
        t.db.queryInWorkspaces([{ workspaceId: ws.workspaceId, statement: sqlText`select 1` }]),
      ),
    ).rejects.toMatchObject({ code: 'DB_AMBIENT_TRANSACTION' });
    await expect(
      t.db.queryInWorkspaces([{ workspaceId: "x'; drop table users; --", statement: sqlText`select 1` }]),
    ).rejects.toMatchObject({ code: 'DB_INVALID_WORKSPACE_ID' });
  });

  it('a swallowed statement failure is not reported as a commit', async () => {
    await expect(
      t.db.transaction(async () => {
        await t.db.executor.execute(sql`select 1/0`).catch(() => undefined);
        return 'looks fine';
      }),
    ).rejects.toBeInstanceOf(TransactionAbortedError);
  });

  it('synchronousCommit: false relaxes only the transaction it opens', async () => {
    const inside = await t.db.transaction(
      async () =>
        (await t.db.executor.execute<{ v: string }>(sql`select current_setting('synchronous_commit') as v`))
          .rows[0]!.v,
      { synchronousCommit: false },
    );
    expect(inside).toBe('off');
    const after = await t.db.executor.execute<{ v: string }>(
      sql`select current_setting('synchronous_commit') as v`,
    );
    expect(after.rows[0]!.v).toBe('on');
  });

  it('lockTimeoutMs bounds lock waits for the whole transaction', async () => {
    const timeout = await t.db.transaction(
      async () =>
        (await t.db.executor.execute<{ v: string }>(sql`select current_setting('lock_timeout') as v`))
          .rows[0]!.v,
      { lockTimeoutMs: 250 },
    );
    expect(timeout).toBe('250ms');
    const after = await t.db.executor.execute<{ v: string }>(
      sql`select current_setting('lock_timeout') as v`,
    );
    expect(after.rows[0]!.v).toBe('0');
  });

  it('withWorkspace inside a transaction joins it; a second, different workspace is refused', async () => {
    const other = randomUUID();
    await t.db.withWorkspace(ws.workspaceId, async () => {
      const outer = await txid();
      const nested = await t.db.withWorkspace(ws.workspaceId, () => txid());
      expect(nested).toBe(outer);
      await expect(t.db.withWorkspace(other, () => txid())).rejects.toBeInstanceOf(
        WorkspaceContextConflictError,
      );
    });
  });

  it('a workspace bound inside an unbound transaction: the first error surfaces, the binding ends', async () => {
    // The failed statement aborts the transaction, so unbinding fails too (25P02); the caller
    // must see division_by_zero, not that.
    await expect(
      t.db.transaction(() =>
        t.db.withWorkspace(ws.workspaceId, () => t.db.executor.execute(sql`select 1 / 0`)),
      ),
    ).rejects.toMatchObject({ cause: expect.objectContaining({ code: '22012' }) });
    // A non-SQL error leaves the transaction usable, and the workspace is unbound again.
    const bound = await t.db.transaction(async () => {
      await expect(
        t.db.withWorkspace(ws.workspaceId, async () => {
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      const r = await t.db.executor.execute<{ v: string }>(
        sql`select current_setting('app.workspace_id', true) as v`,
      );
      return r.rows[0]!.v;
    });
    expect(bound).toBe('');
  });
});

describe('Database: nothing reaches a connection after its transaction settles', () => {
  let ws: { workspaceId: string; userId: string };
  const insert = (k: string) =>
    sql.raw(`insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
       values ('${ws.workspaceId}', '${ws.userId}', '${k}', 'POST /s', '\\x00', 'k1', 'PROCESSING', now() + interval '2 days')`);
  const rows = async (k: string) =>
    (
      await t.owner.query(`select count(*)::int as n from idempotency_requests where idempotency_key = $1`, [
        k,
      ])
    ).rows[0].n as number;
  /** What the connection of a one-connection Database is in now: idle, no workspace bound. */
  const connection = async (db: Database) =>
    (
      await db.pool.query<{ idle: boolean; ws: string | null }>(
        `select now() = statement_timestamp() as idle, nullif(current_setting('app.workspace_id', true), '') as ws`,
      )
    ).rows[0];
  beforeAll(async () => {
    ws = await seedWorkspace(t.owner);
  });
  /** fn with a Database of one connection of its own (what it leaves on it is what is checked). */
  const onOneConnection = async (fn: (db: Database) => Promise<void>) => {
    const db = new Database({ connectionString: t.info.appUrl, max: 1 });
    try {
      await fn(db);
    } finally {
      await db.close();
    }
  };

  it('a Promise.all whose other half rejects: nothing follows the ROLLBACK', async () => {
    await onOneConnection(async (db) => {
      // Two timings: the statement is sent before fn rejects (it runs inside, and is rolled back),
      // or it waits for BEGIN, whose answer comes after fn rejected (a slow first statement holds
      // BEGIN's message). Either way nothing may follow the ROLLBACK onto the connection.
      for (const slowFirst of [false, true]) {
        const k = randomUUID();
        let statement: Promise<unknown> | undefined;
        const { queries } = await sentQueries(async () => {
          await expect(
            db.withWorkspace(ws.workspaceId, () =>
              Promise.all([
                slowFirst && db.prepared('settle_sleep', 'select pg_sleep($1::float8) as slept', [0.2]),
                // Promise.resolve: a Drizzle query runs again at every then(); this runs it once.
                (statement = Promise.resolve(db.executor.execute(insert(k)))),
                new Promise((_, reject) => setTimeout(() => reject(new Error('validation failed')), 50)),
              ]),
            ),
          ).rejects.toThrow('validation failed');
          await statement!.catch(() => undefined);
          await new Promise((r) => setTimeout(r, 250)); // whatever was on its way has arrived
        });
        expect(queries.at(-1)).toBe('ROLLBACK');
        if (slowFirst) {
          await expect(statement).rejects.toMatchObject({ cause: expect.any(TransactionClosedError) });
        }
        expect(await rows(k)).toBe(0);
        expect(await connection(db)).toEqual({ idle: true, ws: null });
      }
    });
  });

  it('a lazy Drizzle query awaited after its transaction: refused, nothing sent', async () => {
    await onOneConnection(async (db) => {
      const k = randomUUID();
      // Drizzle builds queries lazily: this one sends nothing until awaited.
      const built = await db.withWorkspace(ws.workspaceId, async () => ({
        query: db.executor.execute(insert(k)),
      }));
      const { result, queries } = await sentQueries(() => Promise.allSettled([built.query]));
      expect(result[0]).toMatchObject({
        status: 'rejected',
        reason: { cause: expect.any(TransactionClosedError) },
      });
      expect(queries).toEqual([]);
      expect(await rows(k)).toBe(0);
      expect(await connection(db)).toEqual({ idle: true, ws: null });
    });
  });

  it("a first statement's heal (42P05) that ends after the rejection: no transaction left open", async () => {
    await onOneConnection(async (db) => {
      // Held under the name without the Database knowing: its PREPARE fails (42P05), then heals.
      await db.pool.query('PREPARE s_settle_probe AS select $1::int + 1 as n');
      let first: Promise<unknown> | undefined;
      await expect(
        db.withWorkspace(ws.workspaceId, () =>
          Promise.all([
            (first = db.prepared('settle_probe', 'select $1::int + 1 as n', [1])),
            Promise.reject(new Error('validation failed')),
          ]),
        ),
      ).rejects.toThrow('validation failed');
      await first!.catch(() => undefined);
      await new Promise((r) => setTimeout(r, 50)); // anything still on its way has arrived
      expect(await connection(db)).toEqual({ idle: true, ws: null });
    });
  });

  it('a hot statement queued for COMMIT after fn returned is refused, not silently dropped', async () => {
    await onOneConnection(async (db) => {
      const k = randomUUID();
      let queued: Promise<boolean> | undefined;
      await db.withWorkspace(ws.workspaceId, async () => {
        // not awaited: its first use prepares in a round trip, and fn has returned by then
        queued = db.tryExecutePreparedAtCommitInWorkspace(
          ws.workspaceId,
          'settle_insert',
          `insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
             values ($1, $2, $3, 'POST /s', '\\x00', 'k1', 'PROCESSING', now() + interval '2 days')`,
          [ws.workspaceId, ws.userId, k],
        );
      });
      await expect(queued).rejects.toBeInstanceOf(TransactionClosedError);
      expect(await rows(k)).toBe(0);
    });
  });

  it('a statement ending in a -- comment stays one statement: at COMMIT and as a first statement', async () => {
    await onOneConnection(async (db) => {
      const k = randomUUID();
      await db.withWorkspace(ws.workspaceId, async () => {
        db.executeAtCommit(
          sqlText`insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
             values (${sqlUuid(ws.workspaceId)}, ${sqlUuid(ws.userId)}, ${sqlUuid(k)}, 'POST /s', '\\x00', 'k1', 'PROCESSING', now() + interval '2 days') -- the record, with the commit`,
        );
      });
      expect(await rows(k)).toBe(1);
      expect(await connection(db)).toEqual({ idle: true, ws: null });

      const rolledBack = randomUUID();
      await expect(
        db.withWorkspace(ws.workspaceId, async () => {
          await db.prepared('comment_probe', 'select $1::int as n -- one', [5]);
          await db.executor.execute(insert(rolledBack));
          throw new Error('fail the transaction');
        }),
      ).rejects.toThrow('fail the transaction');
      expect(await rows(rolledBack)).toBe(0); // it ran inside the transaction, rolled back
      expect(await connection(db)).toEqual({ idle: true, ws: null });
    });
  });

  it('concurrent bindings inside an unbound transaction: the same workspace shares one, another is refused', async () => {
    const other = randomUUID();
    const bound = () =>
      t.db.executor
        .execute<{ v: string }>(sql`select current_setting('app.workspace_id', true) as v`)
        .then((r) => r.rows[0]!.v);
    const seen = await t.db.transaction(async () => {
      const both = await Promise.all([
        t.db.withWorkspace(ws.workspaceId, async () => [await bound(), await bound(), await bound()]),
        t.db.withWorkspace(ws.workspaceId, async () => [await bound()]),
      ]);
      const refused = await Promise.allSettled([
        t.db.withWorkspace(ws.workspaceId, async () => [await bound(), await bound()]),
        t.db.withWorkspace(other, () => bound()),
      ]);
      return { both, refused, after: await bound() };
    });
    expect(seen.both).toEqual([[ws.workspaceId, ws.workspaceId, ws.workspaceId], [ws.workspaceId]]);
    expect(seen.refused[0]).toEqual({ status: 'fulfilled', value: [ws.workspaceId, ws.workspaceId] });
    expect(seen.refused[1]).toMatchObject({
      status: 'rejected',
      reason: expect.any(WorkspaceContextConflictError),
    });
    expect(seen.after).toBe(''); // unbound once the last one left
  });
});

describe('Database: BEGIN travels with the first statement', () => {
  let ws: { workspaceId: string; userId: string };
  const count = `select count(*)::int as n from idempotency_requests where idempotency_key = $1`;
  const insertAtCommit = (k: string) =>
    sqlText`insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
       values (${sqlUuid(ws.workspaceId)}, ${sqlUuid(ws.userId)}, ${sqlUuid(k)}, 'POST /b', '\\x00', 'k1', 'PROCESSING', now() + interval '2 days')`;
  beforeAll(async () => {
    ws = await seedWorkspace(t.owner);
  });

  it('a transaction that sends no statement sends nothing, and still runs its afterCommit callbacks', async () => {
    const done: string[] = [];
    const { queries: messages } = await sentQueries(() =>
      t.db.withWorkspace(ws.workspaceId, async () => t.db.afterCommit(() => done.push('after'))),
    );
    expect(messages).toEqual([]);
    expect(done).toEqual(['after']);
    const failed = await sentQueries(() =>
      t.db
        .withWorkspace(ws.workspaceId, async () => Promise.reject(new Error('before any SQL')))
        .catch((e: Error) => e.message),
    );
    expect(failed).toEqual({ result: 'before any SQL', queries: [] }); // no ROLLBACK either
  });

  it('statements queued for COMMIT alone go in one message with BEGIN, all or nothing', async () => {
    const key = randomUUID();
    const { queries: messages } = await sentQueries(() =>
      t.db.withWorkspace(ws.workspaceId, async () => t.db.executeAtCommit(insertAtCommit(key))),
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(
      /^BEGIN; SELECT set_config\('app.workspace_id'[\s\S]*insert into[\s\S]*COMMIT$/,
    );
    expect((await t.owner.query(count, [key])).rows[0].n).toBe(1);

    const other = randomUUID();
    await expect(
      t.db.withWorkspace(ws.workspaceId, async () => {
        t.db.executeAtCommit(insertAtCommit(other));
        t.db.executeAtCommit(sqlText`select 1/0`);
      }),
    ).rejects.toThrow(/division by zero/);
    expect((await t.owner.query(count, [other])).rows[0].n).toBe(0);
  });

  it('a prepared() first statement goes with BEGIN as EXECUTE, PREPAREd once per connection', async () => {
    const db = new Database({ connectionString: t.info.appUrl, max: 1 });
    const probe = () =>
      db.withWorkspace(
        ws.workspaceId,
        async () => {
          const first = await db.prepared<{ ws: string; lock: string }>(
            'begin_probe',
            `select current_setting('app.workspace_id') as ws, current_setting('lock_timeout') as lock,
                    $1::text as echo, $2::int as n, $3::bytea as b`,
            ["it's", 7, Buffer.from([0, 255])],
          );
          const second = await db.executor.execute<{ txid: string }>(
            sql`select txid_current()::text as txid`,
          );
          return { first: first[0], txid: second.rows[0]!.txid };
        },
        { lockTimeoutMs: 1234 },
      );
    try {
      const one = await sentQueries(probe);
      expect(one.result.first).toEqual({
        ws: ws.workspaceId,
        lock: '1234ms',
        echo: "it's",
        n: 7,
        b: Buffer.from([0, 255]),
      });
      expect(one.queries).toHaveLength(3); // PREPARE + BEGIN + EXECUTE, the select, COMMIT
      expect(one.queries[0]).toMatch(
        /^PREPARE s_begin_probe AS [\s\S]*;\nBEGIN; [\s\S]*;\nEXECUTE s_begin_probe\(/,
      );
      // the binding and the settings in one statement
      expect(one.queries[0]).toContain(
        `;\nBEGIN; SELECT set_config('app.workspace_id', '${ws.workspaceId}', true), set_config('lock_timeout', '1234', true)\n;\n`,
      );
      const two = await sentQueries(probe);
      expect(two.queries[0]).toMatch(/^BEGIN; [\s\S]*;\nEXECUTE s_begin_probe\(/); // prepared already
      expect(two.result.first).toEqual(one.result.first);
    } finally {
      await db.close();
    }
  });

  it('a connection whose prepared statements differ from its record heals once, in both directions', async () => {
    const db = new Database({ connectionString: t.info.appUrl, max: 1 });
    const run = () =>
      db.withWorkspace(ws.workspaceId, () =>
        db.prepared<{ n: number }>('heal_probe', 'select $1::int + 1 as n', [41]),
      );
    try {
      // Prepared behind the Database's back: its PREPARE fails (42P05) before BEGIN runs.
      await db.pool.query('PREPARE s_heal_probe AS select $1::int + 1 as n');
      expect((await run())[0]!.n).toBe(42);
      // Deallocated behind its back: EXECUTE fails (26000), is rolled back and sent again.
      await db.pool.query('DEALLOCATE s_heal_probe');
      const healed = await sentQueries(run);
      expect(healed.result[0]!.n).toBe(42);
      expect(healed.queries.filter((m) => m.startsWith('PREPARE s_heal_probe'))).toHaveLength(1);
      // and the connection is clean afterwards: no transaction left open
      expect((await db.pool.query(`select now() = statement_timestamp() as idle`)).rows[0].idle).toBe(true);
    } finally {
      await db.close();
    }
  });

  it('a first statement whose name the connection holds: kept when it is its text, else replaced', async () => {
    const text = 'select $1::int + 1 as n';
    const held = async (db: Database) =>
      (await db.pool.query(`select statement from pg_prepared_statements where name = 's_stale_probe'`))
        .rows[0]?.statement as string | undefined;
    // Each case on a connection new to its Database (as a session pooler hands one over) that
    // already holds a statement under the name.
    const firstUseAfter = async (prepare: string) => {
      const db = new Database({ connectionString: t.info.appUrl, max: 1 });
      try {
        await db.pool.query(prepare);
        await db.pool.query('ROLLBACK').catch(() => undefined); // beginWith's form leaves BEGIN open
        const { result, queries } = await sentQueries(() =>
          db.withWorkspace(ws.workspaceId, () => db.prepared<{ n: number }>('stale_probe', text, [41])),
        );
        return { n: result[0]!.n, queries, stored: await held(db) };
      } finally {
        await db.close();
      }
    };
    const prepares = (queries: string[]) => queries.filter((m) => m.startsWith('PREPARE s_stale_probe'));

    // Another deploy's statement under the name: deallocated and prepared again, never run.
    const stale = await firstUseAfter('PREPARE s_stale_probe AS select $1::int + 2 as n');
    expect(stale.n).toBe(42);
    expect(prepares(stale.queries)).toHaveLength(2);
    expect(stale.queries).toContain('DEALLOCATE s_stale_probe');
    expect(stale.stored).toMatch(/^PREPARE s_stale_probe AS select \$1::int \+ 1 as n\n;\nBEGIN/);

    // Its own, whichever way it was prepared (pg_prepared_statements holds the whole message):
    // kept, its failed PREPARE the only one.
    for (const own of [
      `PREPARE s_stale_probe AS ${text}`,
      `PREPARE s_stale_probe AS ${text}\n;\nBEGIN\n;\nEXECUTE s_stale_probe(1)`,
    ]) {
      const kept = await firstUseAfter(own);
      expect(kept.n).toBe(42);
      expect(prepares(kept.queries)).toHaveLength(1);
      expect(kept.queries).not.toContain('DEALLOCATE s_stale_probe');
      expect(kept.stored).toBe(own);
    }
  });

  describe('a hot statement at COMMIT (tryExecutePreparedAtCommitInWorkspace)', () => {
    const insertText = `insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
       values ($1, $2, $3, $4, $5, 'k1', 'PROCESSING', now() + interval '2 days') returning 1`;
    const insertAt = (db: Database, k: string, operation = 'POST /p') =>
      db.withWorkspace(ws.workspaceId, () =>
        db.tryExecutePreparedAtCommitInWorkspace(ws.workspaceId, 'commit_probe', insertText, [
          ws.workspaceId,
          ws.userId,
          k,
          operation,
          Buffer.from([0, 255]),
        ]),
      );
    /** The probe's insert queued at COMMIT, inside a transaction the caller opened. */
    const probeAt = (db: Database) =>
      db.tryExecutePreparedAtCommitInWorkspace(ws.workspaceId, 'commit_probe', insertText, [
        ws.workspaceId,
        ws.userId,
        randomUUID(),
        'POST /p',
        Buffer.from([0]),
      ]);
    const preparesOf = (queries: string[]) => queries.filter((q) => q.startsWith('DO $prepare$'));
    /** The probe's prepared statement on the connection (max: 1, so the pool's query runs on it). */
    const preparedProbe = async (db: Database, name = 's_commit_probe') =>
      (
        await db.pool.query<{ statement: string; at: Date }>(
          `select statement, prepare_time as at from pg_prepared_statements where name = $1`,
          [name],
        )
      ).rows[0] ?? null;
    const preparedAt = async (db: Database) => (await preparedProbe(db))?.at ?? null;
    const keyIdOf = async (k: string) =>
      (
        await t.owner.query(
          `select fingerprint_key_id from idempotency_requests where idempotency_key = $1`,
          [k],
        )
      ).rows[0]?.fingerprint_key_id;
    const rowOf = async (k: string) =>
      (
        await t.owner.query(
          `select operation, fingerprint from idempotency_requests where idempotency_key = $1`,
          [k],
        )
      ).rows;

    it('goes as EXECUTE with COMMIT, the connection PREPAREing it once, in a round trip of its own', async () => {
      const db = new Database({ connectionString: t.info.appUrl, max: 1 });
      try {
        await db.checkPreparedStatements(); // as every role that prepares does at start-up
        const [k1, k2] = [randomUUID(), randomUUID()];
        const one = await sentQueries(() => insertAt(db, k1, "it's"));
        expect(one.result).toBe(true);
        expect(one.queries).toEqual([
          expect.stringMatching(/^DO \$prepare\$ /),
          expect.stringMatching(
            /^BEGIN; SELECT set_config[\s\S]*;\nEXECUTE s_commit_probe\([\s\S]*\)\n;\nCOMMIT$/,
          ),
        ]);
        const two = await sentQueries(() => insertAt(db, k2));
        expect(two.queries).toEqual([expect.stringMatching(/^BEGIN; [\s\S]*;\nEXECUTE s_commit_probe\(/)]);
        expect(await rowOf(k1)).toEqual([{ operation: "it's", fingerprint: Buffer.from([0, 255]) }]);
        expect(await rowOf(k2)).toHaveLength(1);
        // What PostgreSQL holds is the text as written, quotes and all.
        expect((await preparedProbe(db))?.statement).toBe(`PREPARE s_commit_probe AS ${insertText}`);
      } finally {
        await db.close();
      }
    });

    it('reaches PostgreSQL as written: quotes and backslashes in the text', async () => {
      const db = new Database({ connectionString: t.info.appUrl, max: 1 });
      const text = insertText.replace("'k1'", "'it''s k\\1'");
      try {
        const k = randomUUID();
        await db.withWorkspace(ws.workspaceId, () =>
          db.tryExecutePreparedAtCommitInWorkspace(ws.workspaceId, 'slash_probe', text, [
            ws.workspaceId,
            ws.userId,
            k,
            'POST /p',
            Buffer.from([0]),
          ]),
        );
        expect(await keyIdOf(k)).toBe("it's k\\1");
        expect((await preparedProbe(db, 's_slash_probe'))?.statement).toBe(
          `PREPARE s_slash_probe AS ${text}`,
        );
      } finally {
        await db.close();
      }
    });

    it('replaces a statement of another text under its name (from an older deploy, on a reused connection)', async () => {
      const db = new Database({ connectionString: t.info.appUrl, max: 1 });
      try {
        await db.pool.query(`PREPARE s_commit_probe AS ${insertText.replace("'k1'", "'k0'")}`);
        const k = randomUUID();
        const { queries } = await sentQueries(() => insertAt(db, k));
        expect(preparesOf(queries)).toHaveLength(1);
        expect(await keyIdOf(k)).toBe('k1');
        expect((await preparedProbe(db))?.statement).toBe(`PREPARE s_commit_probe AS ${insertText}`);
      } finally {
        await db.close();
      }
    });

    it('uses a statement prepared behind its back, and after a DEALLOCATE fails one transaction, whole, then prepares again', async () => {
      const db = new Database({ connectionString: t.info.appUrl, max: 1 });
      try {
        await db.pool.query(`PREPARE s_commit_probe AS ${insertText}`);
        const before = await preparedAt(db);
        const k1 = randomUUID();
        const found = await sentQueries(() => insertAt(db, k1));
        // Checked once, and kept: a second PREPARE would have failed (42P05) or replaced it.
        expect(preparesOf(found.queries)).toHaveLength(1);
        expect(await preparedAt(db)).toEqual(before);
        expect(await rowOf(k1)).toHaveLength(1);

        await db.pool.query('DEALLOCATE s_commit_probe');
        const [lost, k3] = [randomUUID(), randomUUID()];
        await expect(
          db.withWorkspace(ws.workspaceId, async () => {
            db.executeAtCommit(insertAtCommit(lost));
            await probeAt(db);
          }),
        ).rejects.toMatchObject({ code: '26000' });
        expect((await t.owner.query(count, [lost])).rows[0].n).toBe(0); // nothing of it committed
        expect(await preparedAt(db)).toBeNull();
        const healed = await sentQueries(() => insertAt(db, k3));
        expect(preparesOf(healed.queries)).toHaveLength(1);
        expect(await preparedAt(db)).not.toBeNull();
        expect(await rowOf(k3)).toHaveLength(1);
      } finally {
        await db.close();
      }
    });

    it('after a swallowed failure, the first use on a connection fails as COMMIT would, and the next transaction prepares it', async () => {
      const db = new Database({ connectionString: t.info.appUrl, max: 1 });
      try {
        await expect(
          db.withWorkspace(ws.workspaceId, async () => {
            await db.executor.execute(sql`select 1/0`).catch(() => undefined);
            await probeAt(db);
          }),
        ).rejects.toBeInstanceOf(TransactionAbortedError);
        const k = randomUUID();
        const next = await sentQueries(() => insertAt(db, k));
        expect(preparesOf(next.queries)).toHaveLength(1);
        expect(await rowOf(k)).toHaveLength(1);
      } finally {
        await db.close();
      }
    });

    it('a role that may not run DO blocks: the start-up check or the first refusal finds it; first uses check, then PREPARE', async () => {
      // As a hardened database may: no USAGE on plpgsql for PUBLIC (this file's database only).
      const url = new URL(t.info.adminUrl);
      url.pathname = `/${t.info.name}`;
      const admin = new Client({ connectionString: url.toString() });
      await admin.connect();
      const [checked, unchecked, begun] = [1, 2, 3].map(
        () => new Database({ connectionString: t.info.appUrl, max: 1 }),
      ) as [Database, Database, Database];
      const twoTrips = [
        'select statement from pg_prepared_statements where name = $1',
        `PREPARE s_commit_probe AS ${insertText}`,
        expect.stringMatching(/^BEGIN; [\s\S]*;\nEXECUTE s_commit_probe\([\s\S]*\)\n;\nCOMMIT$/),
      ];
      try {
        await admin.query('REVOKE USAGE ON LANGUAGE plpgsql FROM PUBLIC');

        await checked.checkPreparedStatements();
        // A statement of another text under the name is replaced this way too.
        await checked.pool.query(`PREPARE s_commit_probe AS ${insertText.replace("'k1'", "'k0'")}`);
        const k = randomUUID();
        const first = await sentQueries(() => insertAt(checked, k));
        expect(first.queries).toEqual([twoTrips[0], 'DEALLOCATE s_commit_probe', ...twoTrips.slice(1)]);
        expect(await keyIdOf(k)).toBe('k1');
        const again = await sentQueries(() => insertAt(checked, randomUUID()));
        expect(again.queries).toEqual([expect.stringMatching(/^BEGIN; [\s\S]*;\nEXECUTE s_commit_probe\(/)]);

        // Unchecked, before its transaction began: the refused DO block is learnt, and the
        // statement prepared the other way at once.
        const k2 = randomUUID();
        const learnt = await sentQueries(() => insertAt(unchecked, k2));
        expect(learnt.queries).toEqual([expect.stringMatching(/^DO \$prepare\$ /), ...twoTrips]);
        expect(await rowOf(k2)).toHaveLength(1);

        // Unchecked, inside a transaction that began: that transaction fails, the next one works.
        await expect(
          begun.withWorkspace(ws.workspaceId, async () => {
            await begun.executor.execute(sql`select 1`);
            await probeAt(begun);
          }),
        ).rejects.toMatchObject({ code: '42501' });
        const k3 = randomUUID();
        expect((await sentQueries(() => insertAt(begun, k3))).queries).toEqual(twoTrips);
        expect(await rowOf(k3)).toHaveLength(1);
      } finally {
        await admin.query('GRANT USAGE ON LANGUAGE plpgsql TO PUBLIC');
        await admin.end();
        await Promise.all([checked.close(), unchecked.close(), begun.close()]);
      }
    });

    it('without named statements (a transaction pooler) goes inlined as text; unbound at COMMIT it queues nothing', async () => {
      const db = new Database({ connectionString: t.info.appUrl, max: 1, preparedStatements: false });
      try {
        const k = randomUUID();
        const { result, queries } = await sentQueries(() => insertAt(db, k, "it's"));
        expect(result).toBe(true);
        expect(queries).toHaveLength(1);
        expect(queries[0]).toMatch(
          /^BEGIN; [\s\S]*;\ninsert into idempotency_requests [\s\S]*'it''s'[\s\S]*;\nCOMMIT$/,
        );
        expect(await rowOf(k)).toEqual([{ operation: "it's", fingerprint: Buffer.from([0, 255]) }]);

        const queued = await db.transaction(() =>
          db.withWorkspace(ws.workspaceId, () =>
            db.tryExecutePreparedAtCommitInWorkspace(ws.workspaceId, 'commit_probe', insertText, []),
          ),
        );
        expect(queued).toBe(false); // the binding ends before COMMIT: the caller runs it itself
      } finally {
        await db.close();
      }
    });
  });

  it('a first statement that fails leaves nothing behind, and the connection serves the next one', async () => {
    const db = new Database({ connectionString: t.info.appUrl, max: 1 });
    const key = randomUUID();
    try {
      await expect(
        db.withWorkspace(ws.workspaceId, async () => {
          db.executeAtCommit(insertAtCommit(key));
          await db.prepared('failing_first', 'select 1 / $1::int as n', [0]);
        }),
      ).rejects.toThrow(/division by zero/);
      expect((await t.owner.query(count, [key])).rows[0].n).toBe(0);
      const next = await db.withWorkspace(ws.workspaceId, () =>
        db.prepared<{ n: number }>('failing_first', 'select 1 / $1::int as n', [1]),
      );
      expect(next[0]!.n).toBe(1);
    } finally {
      await db.close();
    }
  });

  it('a Drizzle first statement waits for BEGIN, sent alone; concurrent first statements share it', async () => {
    const { result, queries: messages } = await sentQueries(() =>
      t.db.withWorkspace(ws.workspaceId, async () => {
        const [a, b] = await Promise.all([txid(), txid()]);
        const c = await t.db.prepared<{ t: string }>('txid_after', 'select txid_current()::text as t', []);
        return [a, b, c[0]!.t];
      }),
    );
    expect(new Set(result).size).toBe(1); // one transaction
    expect(messages[0]).toMatch(/^BEGIN; SELECT set_config/);
    expect(messages.filter((m) => /^BEGIN/.test(m))).toHaveLength(1);
    expect(messages.at(-1)).toBe('COMMIT');
  });
});

async function backendPid(): Promise<number> {
  const result = await t.db.executor.execute<{ pid: number }>(sql`select pg_backend_pid() as pid`);
  return result.rows[0]!.pid;
}
