import { randomUUID } from 'node:crypto';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { RetentionService } from '../src';
import { insertEvents } from './helpers';

const t = useTestDatabase();

describe('RetentionService', () => {
  it('deletes old dispatched events, old inbox rows and expired idempotency records in bounded batches, nothing else', async () => {
    const { workspaceId: ws, userId } = await seedWorkspace(t.owner);
    const old = await insertEvents(t.owner, ws, 25);
    const recent = await insertEvents(t.owner, ws, 5);
    const pendingOld = await insertEvents(t.owner, ws, 3);
    await t.owner.query(
      `update outbox_events set status = 'dispatched', dispatched_at = now() - interval '8 days' where id = any($1::uuid[])`,
      [old],
    );
    await t.owner.query(
      `update outbox_events set status = 'dispatched', dispatched_at = now() - interval '1 hour' where id = any($1::uuid[])`,
      [recent],
    );
    await t.owner.query(
      `update outbox_events set created_at = now() - interval '30 days' where id = any($1::uuid[])`,
      [pendingOld],
    );
    for (const [i, id] of old.slice(0, 4).entries()) {
      await t.owner.query(
        `insert into outbox_inbox (workspace_id, handler, event_id, processed_at) values ($1, 'h', $2, now() - ($3 || ' days')::interval)`,
        [ws, id, i < 3 ? '40' : '1'],
      );
    }
    for (const expired of [true, true, false]) {
      await t.owner.query(
        `insert into idempotency_requests (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id,
           status, created_at, expires_at)
         values ($1, $2, $3, 'POST /x', '\\x00', 'k', 'PROCESSING', now() - interval '3 days',
                 now() - interval '3 days' + interval '48 hours' + ($4 || ' hours')::interval)`,
        [ws, userId, randomUUID(), expired ? '-1' : '48'],
      );
    }

    const bounded = new RetentionService(t.agentDb, {
      dispatchedRetentionMs: 7 * 24 * 3600_000,
      inboxRetentionMs: 30 * 24 * 3600_000,
      batchSize: 10,
      maxBatches: 2,
    });
    expect(await bounded.run()).toEqual({ dispatched: 20, inbox: 3, idempotency: 2 });
    expect(await bounded.run()).toEqual({ dispatched: 5, inbox: 0, idempotency: 0 });

    const { rows } = await t.owner.query(`select id from outbox_events order by id`);
    expect(rows.map((r) => r.id).sort()).toEqual([...recent, ...pendingOld].sort());
    expect((await t.owner.query(`select count(*)::int as n from outbox_inbox`)).rows[0].n).toBe(1);
    expect((await t.owner.query(`select count(*)::int as n from idempotency_requests`)).rows[0].n).toBe(1);
  });
});
