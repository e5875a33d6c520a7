import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Database, PgErrorCode, pgErrorCode } from '@listing/db';
import { seedWorkspace, useTestDatabase } from '@listing/testing';

const t = useTestDatabase();

/** Row-level security as the application role (app_user). */
describe('workspace row-level security as app_user', () => {
  let a: { workspaceId: string; userId: string };
  let b: { workspaceId: string; userId: string };

  beforeAll(async () => {
    a = await seedWorkspace(t.owner, 'A');
    b = await seedWorkspace(t.owner, 'B');
    for (const ws of [a, b]) {
      await t.owner.query(
        `insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint,
           fingerprint_key_id, status, expires_at)
         values ($1, $2, $3, 'POST /x', '\\x00', 'k1', 'PROCESSING', now() + interval '2 days')`,
        [ws.workspaceId, ws.userId, randomUUID()],
      );
      await t.owner.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload) values ($1, $2, 'q', 'e', '{}')`,
        [randomUUID(), ws.workspaceId],
      );
    }
  });

  /** Resolves to the SQLSTATE the statement failed with. */
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => 'no error',
      (e: unknown) => pgErrorCode(e),
    );

  const count = async (table: string) => {
    const r = await t.db.executor.execute<{ n: number }>(sql.raw(`select count(*)::int as n from ${table}`));
    return r.rows[0]!.n;
  };

  it('the connection really is app_user, without BYPASSRLS, owning no table', async () => {
    const who = await t.db.executor.execute<{ user: string; bypass: boolean; superuser: boolean }>(
      sql`select current_user as user, rolbypassrls as bypass, rolsuper as superuser from pg_roles where rolname = current_user`,
    );
    expect(who.rows[0]).toEqual({ user: 'app_user', bypass: false, superuser: false });
    const owned = await t.owner.query(
      `select c.relname from pg_class c join pg_roles r on r.oid = c.relowner
        join pg_namespace n on n.oid = c.relnamespace
       where r.rolname = 'app_user' and n.nspname = 'public'`,
    );
    expect(owned.rows).toEqual([]);
  });

  it('every tenant table has RLS enabled and forced', async () => {
    const { rows } = await t.owner.query<{
      relname: string;
      relrowsecurity: boolean;
      relforcerowsecurity: boolean;
    }>(
      `select c.relname, c.relrowsecurity, c.relforcerowsecurity from pg_class c
        join pg_attribute a on a.attrelid = c.oid and a.attname = 'workspace_id' and not a.attisdropped
        join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'public' and c.relkind = 'r'`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const row of rows) expect(row).toMatchObject({ relrowsecurity: true, relforcerowsecurity: true });
  });

  it('with no app.workspace_id: nothing is readable and INSERT is rejected', async () => {
    await t.db.transaction(async () => {
      expect(await count('idempotency_requests')).toBe(0);
      expect(await count('outbox_events')).toBe(0);
      expect(await count('workspaces')).toBe(0);
    });
    expect(await count('outbox_events')).toBe(0); // outside any transaction too
    expect(
      await failure(
        t.db.transaction(() =>
          t.db.executor.execute(
            sql`insert into outbox_events (id, workspace_id, queue, event_type, payload) values (${randomUUID()}, ${a.workspaceId}, 'q', 'e', '{}')`,
          ),
        ),
      ),
    ).toBe(PgErrorCode.insufficientPrivilege);
    expect(
      await failure(
        t.db.executor.execute(
          sql`insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
              values (${a.workspaceId}, ${a.userId}, ${randomUUID()}, 'POST /x', '\\x00', 'k1', 'PROCESSING', now() + interval '2 days')`,
        ),
      ),
    ).toBe(PgErrorCode.insufficientPrivilege);
  });

  it("with workspace A set: B's rows are invisible and cannot be updated or deleted", async () => {
    await t.db.withWorkspace(a.workspaceId, async () => {
      const rows = await t.db.executor.execute<{ workspace_id: string }>(
        sql`select workspace_id from outbox_events union all select workspace_id from idempotency_requests`,
      );
      expect(rows.rows.map((r) => r.workspace_id)).toEqual([a.workspaceId, a.workspaceId]);
      // (app_user may not update outbox events at all: sql/012; idempotency records it may.)
      const upd = await t.db.executor.execute(
        sql`update idempotency_requests set expires_at = expires_at + interval '1 day' where workspace_id = ${b.workspaceId}`,
      );
      expect(upd.rowCount).toBe(0);
      const del = await t.db.executor.execute(
        sql`delete from idempotency_requests where workspace_id = ${b.workspaceId}`,
      );
      expect(del.rowCount).toBe(0);
    });
    // nor can a row of A be moved into B
    expect(
      await failure(
        t.db.withWorkspace(a.workspaceId, () =>
          t.db.executor.execute(
            sql`update idempotency_requests set workspace_id = ${b.workspaceId} where workspace_id = ${a.workspaceId}`,
          ),
        ),
      ),
    ).toBe(PgErrorCode.insufficientPrivilege);
    const intact = await t.owner.query(
      `select (select count(*)::int from outbox_events where workspace_id = $1 and last_error is null) as events,
              (select count(*)::int from idempotency_requests where workspace_id = $1) as keys`,
      [b.workspaceId],
    );
    expect(intact.rows[0]).toEqual({ events: 1, keys: 1 });
  });

  it('after a transaction ends, the next one on the same pooled connection has no workspace', async () => {
    const single = new Database({ connectionString: t.info.appUrl, max: 1 });
    try {
      const probe = () =>
        single.executor.execute<{ pid: number; ws: string | null; n: number }>(
          sql`select pg_backend_pid() as pid, app_current_workspace()::text as ws, (select count(*)::int from outbox_events) as n`,
        );
      const inside = await single.withWorkspace(a.workspaceId, async () => (await probe()).rows[0]!);
      expect(inside).toMatchObject({ ws: a.workspaceId, n: 1 });
      const after = await single.transaction(async () => (await probe()).rows[0]!);
      expect(after).toEqual({ pid: inside.pid, ws: null, n: 0 });
      // even when the workspace transaction failed
      await expect(
        single.withWorkspace(a.workspaceId, async () => {
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      const afterFailure = (await probe()).rows[0]!;
      expect(afterFailure).toEqual({ pid: inside.pid, ws: null, n: 0 });
    } finally {
      await single.close();
    }
  });

  it("the cross-workspace membership function answers for a live token's user only (sql/024)", async () => {
    // A session and access token for a's user, as login writes them.
    const session = randomUUID();
    const tokenHash = Buffer.from(randomUUID().replace(/-/g, ''), 'hex');
    await t.owner.query(
      `insert into auth_sessions (id, user_id, expires_at) values ($1, $2, now() + interval '1 hour')`,
      [session, a.userId],
    );
    await t.owner.query(
      `insert into auth_access_tokens (token_hash, session_id, user_id, expires_at)
       values ($1, $2, $3, now() + interval '1 hour')`,
      [tokenHash, session, a.userId],
    );
    const rows = await t.db.executor.execute<{ workspace_id: string; role: string }>(
      sql`select * from app_user_workspaces(${tokenHash})`,
    );
    expect(rows.rows).toEqual([{ workspace_id: a.workspaceId, name: 'A', role: 'owner' }]);
    // A user id opens nothing: the signature that took one is gone.
    const byId = await t.db.executor.execute(sql`select * from app_user_workspaces(${a.userId}::uuid)`).then(
      () => 'allowed',
      (error: unknown) => pgErrorCode(error),
    );
    expect(byId).toBe('42883'); // undefined_function
  });

  it('a temp table cannot shadow what a SECURITY DEFINER function reads (pg_temp is searched last)', async () => {
    const { rows } = await t.owner.query(
      `select p.proname, p.proconfig from pg_proc p
        where p.pronamespace = 'public'::regnamespace and p.prosecdef`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(10);
    for (const fn of rows) expect(fn.proconfig).toEqual(['search_path=pg_catalog, public, pg_temp']);
    // a's user is no member of b; a temp workspace_members saying otherwise changes nothing
    const email = () =>
      t.db.withWorkspace(b.workspaceId, async () => {
        await t.db.executor.execute(sql`
          create temp table workspace_members (workspace_id uuid, user_id uuid, role text, created_at timestamptz)
          on commit drop`);
        await t.db.executor.execute(
          sql`insert into workspace_members values (${b.workspaceId}, ${a.userId}, 'owner', now())`,
        );
        return (
          await t.db.executor.execute<{ email: string | null }>(
            sql`select app_member_email(${a.userId}) as email`,
          )
        ).rows[0]!.email;
      });
    expect(await email()).toBeNull();
  });
});

/** The outbox agent (dispatcher, worker, CLI) works on tenant rows, never on accounts (sql/017). */
describe('outbox_agent privileges', () => {
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => 'no error',
      (e: unknown) => pgErrorCode(e),
    );

  it('is no member of app_user and cannot read or write users, sessions, tokens or memberships', async () => {
    const member = await t.owner.query(`select pg_has_role('outbox_agent', 'app_user', 'member') as m`);
    expect(member.rows[0].m).toBe(false);
    const a = await seedWorkspace(t.owner, 'agent-A');
    for (const statement of [
      sql`select password_hash from users limit 1`,
      sql`select * from auth_sessions limit 1`,
      sql`insert into auth_access_tokens select sha256('abc'::bytea), s.id, s.user_id, now() from auth_sessions s limit 1`,
      sql`select * from auth_refresh_tokens limit 1`,
      sql`select * from workspace_invitations limit 1`,
      sql`select app_member_role(${a.userId}, ${a.workspaceId})`,
      sql`select * from app_user_workspaces(${a.userId})`,
    ]) {
      expect(
        await failure(t.agentDb.withWorkspace(a.workspaceId, () => t.agentDb.executor.execute(statement))),
      ).toBe(PgErrorCode.insufficientPrivilege);
    }
    expect(
      await failure(
        t.agentDb.withWorkspace(a.workspaceId, () =>
          t.agentDb.executor.execute(sql`select * from workspace_members`),
        ),
      ),
    ).toBe(PgErrorCode.insufficientPrivilege);
  });

  it("keeps app_user's privileges on every other table, and gets them on tables created later", async () => {
    const { rows } = await t.owner.query(`
      select c.relname,
             has_table_privilege('app_user', c.oid, p) as app, has_table_privilege('outbox_agent', c.oid, p) as agent, p
        from pg_class c, unnest(array['select', 'insert', 'update', 'delete']) p
       where c.relnamespace = 'public'::regnamespace and c.relkind = 'r'
         and c.relname not in ('users', 'auth_sessions', 'auth_access_tokens', 'auth_refresh_tokens',
                               'workspace_members', 'workspace_invitations', 'schema_migrations')`);
    expect(rows.length).toBeGreaterThan(40);
    const missing = rows.filter((r) => r.app && !r.agent).map((r) => `${r.p} on ${r.relname}`);
    expect(missing).toEqual([]);
    await t.owner.query(`create table agent_later (id int)`);
    const later = await t.owner.query(
      `select has_table_privilege('outbox_agent', 'agent_later', 'select, insert, update, delete') as ok`,
    );
    expect(later.rows[0].ok).toBe(true);
    await t.owner.query(`drop table agent_later`);
  });
});
