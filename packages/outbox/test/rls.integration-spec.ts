import { sql } from '@listing/db';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { OutboxDispatcher, OutboxRepository, QueueProducer } from '../src';
import { connectedRedis, insertEvents, statusCounts } from './helpers';

const t = useTestDatabase();
/** A timestamptz as the driver hands it over (text). */
const TIMESTAMPTZ = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?[+-]\d\d/;

/**
 * Seed acceptance check (5): without a workspace context neither app_user (the api) nor
 * outbox_agent (dispatcher, worker, CLI) can read or dispatch an event; app_user cannot even call
 * the outbox's cross-workspace functions (sql/012).
 */
describe('outbox events under row-level security, as app_user and as outbox_agent', () => {
  let a: string;
  let b: string;
  let ids: string[];

  beforeAll(async () => {
    a = (await seedWorkspace(t.owner, 'A')).workspaceId;
    b = (await seedWorkspace(t.owner, 'B')).workspaceId;
    ids = [...(await insertEvents(t.owner, a, 5)), ...(await insertEvents(t.owner, b, 5))];
  });

  it.each(['app_user', 'outbox_agent'])(
    'as %s, reads no outbox event without a workspace context, in or out of a transaction',
    async (role) => {
      const db = role === 'app_user' ? t.db : t.agentDb;
      const count = async () =>
        (await db.executor.execute<{ n: number }>(sql`select count(*)::int as n from outbox_events`)).rows[0]!
          .n;
      expect(await count()).toBe(0);
      expect(await db.transaction(count)).toBe(0);
      expect(await db.withWorkspace(a, count)).toBe(5);
    },
  );

  it('app_user (the api) may not run the outbox’s cross-workspace functions, bound to a workspace or not', async () => {
    const calls = [
      sql`select * from outbox_due_workspaces(null, 100)`,
      sql`select * from outbox_expired_lease_workspaces(100)`,
      sql`select * from outbox_dead_letters(null, null, 100)`,
      sql`select * from outbox_dispatched_since('-infinity', null, null, 100)`,
      sql`select outbox_purge_dispatched(now(), 100)`,
      sql`select outbox_purge_inbox(now(), 100)`,
      sql`select * from outbox_claim_due(${a}, 'intruder', 100, 60000)`,
      sql`select outbox_mark_dispatched('intruder', ${sql.param(ids)}::uuid[])`,
    ];
    /** The PostgreSQL error code of a failed call (drizzle wraps the driver's error). */
    const refusal = (run: Promise<unknown>) =>
      run.then(
        () => 'ran',
        (e: { code?: string; cause?: { code?: string } }) => e.cause?.code ?? e.code,
      );
    for (const call of calls) {
      expect(await refusal(t.db.executor.execute(call))).toBe('42501'); // insufficient_privilege
      expect(await refusal(t.db.withWorkspace(a, () => t.db.executor.execute(call)))).toBe('42501');
      expect(await refusal(t.agentDb.executor.execute(call))).toBe('ran');
    }
    // Nor change an event of its own workspace by hand; appending one is what it does.
    for (const write of [
      sql`update outbox_events set status = 'dispatched', dispatched_at = now()`,
      sql`delete from outbox_events`,
      sql`insert into outbox_inbox (workspace_id, handler, event_id) values (${a}, 'h', ${ids[0]})`,
    ]) {
      expect(await refusal(t.db.withWorkspace(a, () => t.db.executor.execute(write)))).toBe('42501');
    }
    // Aggregates only (both workspaces' events in one count, no payload): the api's backlog metrics.
    const stats = await t.db.executor.execute<Record<string, unknown>>(sql`select * from outbox_stats()`);
    expect(stats.rows).toEqual([
      {
        queue: 'q-test',
        status: 'pending',
        events: '10', // count(*): a bigint, as text
        oldest_created_at: expect.stringMatching(TIMESTAMPTZ),
        oldest_due_at: expect.stringMatching(TIMESTAMPTZ),
      },
    ]);
    expect(await statusCounts(t.owner)).toEqual({ pending: 10 });
  });

  it('cannot claim, mark, release, reclaim or update any event without a workspace context', async () => {
    const repo = new OutboxRepository(t.agentDb);
    // Three of workspace A's events as a dispatcher 'intruder' left them: claimed, the lease long
    // expired; two still due. Every call below would claim or settle them but for RLS (the bound
    // release at the end does).
    const lease = String(Date.UTC(2020, 0, 1) * 1000); // µs since the epoch
    const aIds = ids.slice(0, 3);
    await t.owner.query(
      `update outbox_events set status = 'dispatching', locked_by = 'intruder',
              locked_until = '2020-01-01T00:00:00Z' where id = any($1::uuid[])`,
      [aIds],
    );
    await t.agentDb.transaction(async () => {
      // The dispatcher's hot functions (sql/009) run under RLS too: unbound, they see nothing.
      const claim = await t.agentDb.executor.execute(
        sql`select * from outbox_claim_due(${a}, 'intruder', 100, 60000)`,
      );
      expect(claim.rows).toEqual([]);
      const mark = await t.agentDb.executor.execute<{ n: number }>(
        sql`select outbox_mark_dispatched('intruder', ${sql.param(ids)}::uuid[]) as n`,
      );
      expect(mark.rows[0]!.n).toBe(0);
      expect(
        await repo.release(
          'intruder',
          aIds.map((id) => ({ id, lease })),
        ),
      ).toBe(0);
      expect(await repo.reclaimExpired(a, 100)).toBe(0);
      const raw = await t.agentDb.executor.execute(
        sql`update outbox_events set status = 'dispatched', dispatched_at = now()`,
      );
      expect(raw.rowCount).toBe(0);
      const del = await t.agentDb.executor.execute(sql`delete from outbox_events`);
      expect(del.rowCount).toBe(0);
    });
    expect(await statusCounts(t.owner)).toEqual({ dispatching: 3, pending: 7 });
    // Bound to A, the same release settles them: the zeros above were RLS, not the rows' state.
    expect(
      await t.agentDb.withWorkspace(a, () =>
        repo.release(
          'intruder',
          aIds.map((id) => ({ id, lease })),
        ),
      ),
    ).toBe(3);
    // The worker's dead letter writes the row again when it is gone: refused unbound, and bound
    // to another workspace whether it names that workspace or its own.
    const failed = {
      id: ids[0]!,
      workspaceId: a,
      queue: 'q-test',
      type: 'test.event',
      payload: {},
      maxAttempts: 1,
      createdAt: new Date(),
      attempts: 1,
      error: 'x',
    };
    const refusal = (run: Promise<unknown>) =>
      run.then(
        () => 'ran',
        (e: { code?: string; cause?: { code?: string } }) => e.cause?.code ?? e.code,
      );
    expect(await refusal(t.agentDb.transaction(() => repo.deadLetterFromWorker(failed)))).toBe('42501');
    expect(await refusal(t.agentDb.withWorkspace(b, () => repo.deadLetterFromWorker(failed)))).toBe('42501');
    expect(
      await refusal(
        t.agentDb.withWorkspace(b, () => repo.deadLetterFromWorker({ ...failed, workspaceId: b })),
      ),
    ).toBe('42501');
    // So does the failed-job sweep's.
    const readAt = new Date().toISOString();
    expect(await refusal(t.agentDb.transaction(() => repo.deadLetterStranded([failed], readAt)))).toBe(
      '42501',
    );
    expect(await refusal(t.agentDb.withWorkspace(b, () => repo.deadLetterStranded([failed], readAt)))).toBe(
      '42501',
    );
    expect(await statusCounts(t.owner)).toEqual({ pending: 10 });
  });

  it('bound to workspace A it cannot claim workspace B’s events', async () => {
    const claimed = await t.agentDb.withWorkspace(a, async () => {
      const r = await t.agentDb.executor.execute(
        sql`select * from outbox_claim_due(${b}, 'intruder', 100, 60000)`,
      );
      return r.rows;
    });
    expect(claimed).toEqual([]);
    expect(await statusCounts(t.owner)).toEqual({ pending: 10 });
  });

  it('the repository binds the workspace it claims for, in a transaction of its own', async () => {
    const repo = new OutboxRepository(t.agentDb);
    // Never inside someone else's transaction (it would rebind that transaction's workspace).
    await expect(
      t.agentDb.withWorkspace(a, () => repo.claim(b, 'intruder', 100, 60_000)),
    ).rejects.toMatchObject({
      code: 'DB_AMBIENT_TRANSACTION',
    });
    const claimed = await repo.claim(a, 'owner-of-a', 100, 60_000);
    expect(claimed.map((e) => e.workspaceId)).toEqual(Array(5).fill(a));
    expect(
      await repo.markDispatched(
        b,
        'owner-of-a',
        claimed.map((e) => e.id),
      ),
    ).toBe(0); // wrong workspace
    expect(
      await repo.markDispatched(
        a,
        'someone-else',
        claimed.map((e) => e.id),
      ),
    ).toBe(0); // not our lease
    expect(
      await repo.markDispatched(
        a,
        'owner-of-a',
        claimed.map((e) => e.id),
      ),
    ).toBe(5);
    expect(await statusCounts(t.owner)).toEqual({ pending: 5, dispatched: 5 });
    await t.owner.query(
      `update outbox_events set status = 'pending', dispatched_at = null where workspace_id = $1`,
      [a],
    );
  });

  it('the discovery function gives ids only, and a dispatcher without workspace binding dispatches nothing', async () => {
    const { rows, fields } = await t.agentDb.pool.query(`select * from outbox_due_workspaces(null, 100)`);
    expect(fields.map((f) => f.name)).toEqual(['outbox_due_workspaces']);
    expect(rows.map((r) => r.outbox_due_workspaces).sort()).toEqual([a, b].sort());

    // An engine whose withWorkspace is sabotaged (no binding) claims nothing at all.
    const redis = await connectedRedis(t.info.redis);
    const producer = new QueueProducer(redis, t.info.bullPrefix);
    const unbound = Object.create(t.agentDb) as typeof t.agentDb;
    unbound.withWorkspace = (_ws: string, fn: () => Promise<unknown>) => t.agentDb.transaction(fn) as never;
    unbound.queryInWorkspaces = async (parts: ReadonlyArray<{ statement: string }>) =>
      (await Promise.all(parts.map(async (p) => (await t.agentDb.pool.query(p.statement)).rows))) as never;
    try {
      const d = new OutboxDispatcher({ db: unbound, producer });
      expect(await d.drain(3)).toBe(0);
    } finally {
      await producer.close();
      await redis.quit();
    }
    expect(await statusCounts(t.owner)).toEqual({ pending: 10 });
  });

  it('the inbox is isolated per workspace too', async () => {
    const { rows } = await t.owner.query(
      `select relrowsecurity, relforcerowsecurity from pg_class where relname = 'outbox_inbox'`,
    );
    expect(rows[0]).toEqual({ relrowsecurity: true, relforcerowsecurity: true });
    await t.owner.query(`insert into outbox_inbox (workspace_id, handler, event_id) values ($1, 'h', $2)`, [
      a,
      ids[0],
    ]);
    const count = async () =>
      (await t.agentDb.executor.execute<{ n: number }>(sql`select count(*)::int as n from outbox_inbox`))
        .rows[0]!.n;
    expect(await t.agentDb.transaction(count)).toBe(0);
    expect(await t.agentDb.withWorkspace(b, count)).toBe(0);
    expect(await t.agentDb.withWorkspace(a, count)).toBe(1);
  });

  it('every SECURITY DEFINER function of the outbox is owned by listing_owner, pins search_path, and only outbox_agent may run it (app_user: the aggregate stats alone)', async () => {
    const { rows } = await t.owner.query(`
      select p.proname, r.rolname as owner, p.prosecdef, p.proconfig,
             has_function_privilege('app_user', p.oid, 'execute') as app_exec,
             has_function_privilege('outbox_agent', p.oid, 'execute') as agent_exec,
             coalesce(array_to_string(p.proacl, ','), '') as acl
        from pg_proc p join pg_roles r on r.oid = p.proowner
       where p.proname like 'outbox\\_%' and p.prosecdef`);
    expect(rows.length).toBeGreaterThanOrEqual(7);
    for (const fn of rows) {
      expect(fn).toMatchObject({
        owner: 'listing_owner',
        prosecdef: true,
        agent_exec: true,
        app_exec: fn.proname === 'outbox_stats',
      });
      expect(fn.proconfig).toEqual(['search_path=pg_catalog, public, pg_temp']);
      expect(fn.acl).not.toMatch(/(^|,)=X/); // no EXECUTE for PUBLIC
    }
  });

  it('the claim and mark functions run as the caller (RLS applies), executable by outbox_agent only', async () => {
    const { rows } = await t.owner.query(`
      select p.proname, p.prosecdef, coalesce(array_to_string(p.proacl, ','), '') as acl,
             has_function_privilege('app_user', p.oid, 'execute') as app_exec,
             has_function_privilege('outbox_agent', p.oid, 'execute') as agent_exec
        from pg_proc p where p.proname in ('outbox_claim_due', 'outbox_mark_dispatched') order by 1`);
    expect(rows).toEqual([
      expect.objectContaining({
        proname: 'outbox_claim_due',
        prosecdef: false,
        app_exec: false,
        agent_exec: true,
      }),
      expect.objectContaining({
        proname: 'outbox_mark_dispatched',
        prosecdef: false,
        app_exec: false,
        agent_exec: true,
      }),
    ]);
    for (const fn of rows) expect(fn.acl).not.toMatch(/(^|,)=X/);
  });
});
