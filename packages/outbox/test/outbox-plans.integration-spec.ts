import { sql } from '@listing/db';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { DEFAULT_BACKOFF, OutboxRepository } from '../src';
import { insertEvents } from './helpers';

const t = useTestDatabase();

/**
 * Which index the dispatcher's statements read (sql/010). Counted with the transaction's own
 * scan counters (pg_stat_get_xact_numscans), so the planner's choice is observed, not timed.
 */
describe('outbox statement plans, as app_user', () => {
  const scans = async () => {
    const { rows } = await t.agentDb.executor.execute<{ lease: string; pk: string }>(sql`
      select pg_stat_get_xact_numscans('outbox_events_lease_idx'::regclass) as lease,
             pg_stat_get_xact_numscans('outbox_events_pkey'::regclass) as pk`);
    return { lease: Number(rows[0]!.lease), pk: Number(rows[0]!.pk) };
  };

  it('marks and releases read the primary key, never every in-flight event through the lease index', async () => {
    const ws = (await seedWorkspace(t.owner, 'plans')).workspaceId;
    // A dispatched history, then statistics taken while nothing was in flight (what autovacuum
    // usually sees): the lease index looks empty to the planner, the worst case for the marks.
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload, status, dispatched_at)
       select gen_random_uuid(), $1, 'q-plans', 'plans.event', '{}', 'dispatched', now()
         from generate_series(1, 10000)`,
      [ws],
    );
    await insertEvents(t.owner, ws, 2000, { queue: 'q-plans' });
    await t.owner.query('analyze outbox_events');
    const repo = new OutboxRepository(t.agentDb);

    await t.agentDb.withWorkspace(ws, async () => {
      const claims = (
        await t.agentDb.executor.execute<{ id: string; lease: string }>(
          sql`select id, (extract(epoch from locked_until) * 1000000)::bigint::text as lease
                from outbox_claim_due(${ws}, 'plans', 2000, 60000)`,
        )
      ).rows;
      const claimed = claims.map((r) => r.id);
      expect(claimed).toHaveLength(2000);
      const before = await scans();
      // More calls than plpgsql's five custom plans, so the cached generic plan is used too.
      for (const id of claimed.slice(0, 8)) {
        const { rows } = await t.agentDb.executor.execute<{ n: number }>(
          sql`select outbox_mark_dispatched('plans', ${sql.param([id])}::uuid[]) as n`,
        );
        expect(rows[0]!.n).toBe(1);
      }
      expect(await repo.release('plans', claims.slice(8, 10))).toBe(2);
      expect(await repo.markFailed('plans', claims.slice(10, 12), 'x', DEFAULT_BACKOFF)).toEqual({
        retried: 2,
        deadLettered: 0,
      });
      const after = await scans();
      expect(after.lease - before.lease).toBe(0);
      expect(after.pk - before.pk).toBeGreaterThanOrEqual(12); // 8 marks, 2 released, 2 failed
    });
  });

  it('a claim reads only its rows, also with a plan made while the table was nearly empty', async () => {
    // A new deployment, a truncate, an ANALYZE after a purge: the planner believes the table is
    // tiny, and the plan it caches for 009's claim scanned the whole primary-key index on every
    // later call, however large the table had grown (sql/011).
    await t.owner.query('truncate outbox_events');
    await t.owner.query('analyze outbox_events');
    const ws = (await seedWorkspace(t.owner, 'plans-small-table')).workspaceId;
    await insertEvents(t.owner, ws, 16, { queue: 'q-plans' });
    const pkRead = async () =>
      Number(
        (
          await t.agentDb.executor.execute<{ n: string }>(
            sql`select pg_stat_get_xact_tuples_returned('outbox_events_pkey'::regclass) as n`,
          )
        ).rows[0]!.n,
      );
    const claimOne = async () => {
      const { rows } = await t.agentDb.executor.execute(
        sql`select id from outbox_claim_due(${ws}, 'plans', 1, 60000)`,
      );
      expect(rows).toHaveLength(1);
    };
    await t.agentDb.withWorkspace(ws, async () => {
      // More calls than plpgsql's five custom plans: the generic plan is made and cached now.
      for (let i = 0; i < 8; i++) await claimOne();
      // The table grows (another connection commits), the cached plan stays.
      await t.owner.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload, status, dispatched_at)
         select gen_random_uuid(), $1, 'q-plans', 'plans.event', '{}', 'dispatched', now()
           from generate_series(1, 5000)`,
        [ws],
      );
      const before = await pkRead();
      for (let i = 0; i < 8; i++) await claimOne();
      // Eight rows found by id, not 8 × 5,000 index entries.
      expect((await pkRead()) - before).toBeLessThan(100);
    });
  });

  it('the expired-lease search still reads the lease index', async () => {
    const ws = (await seedWorkspace(t.owner, 'plans-expired')).workspaceId;
    await insertEvents(t.owner, ws, 3, { queue: 'q-plans' });
    await t.owner.query(
      `update outbox_events set status = 'dispatching', locked_by = 'gone',
              locked_until = now() - interval '1 minute' where workspace_id = $1`,
      [ws],
    );
    await t.owner.query('analyze outbox_events'); // whatever the earlier tests left behind
    await t.agentDb.transaction(async () => {
      const before = await scans();
      expect(await new OutboxRepository(t.agentDb).expiredLeaseWorkspaces(10)).toContain(ws);
      expect((await scans()).lease - before.lease).toBeGreaterThanOrEqual(1);
    });
  });
});
