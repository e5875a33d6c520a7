import { randomUUID } from 'node:crypto';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import {
  createTestTables,
  DISPATCHER,
  effectCount,
  killAll,
  roleEnv,
  runCli,
  spawnNode,
  waitUntil,
  WORKER,
} from './processes';

const t = useTestDatabase();
jest.setTimeout(60_000);

describe('dead letters and the operator CLI (real processes)', () => {
  beforeAll(async () => {
    await createTestTables(t.owner);
  });
  afterAll(async () => {
    await killAll();
  });

  it('an always-failing handler ends in dead_letter after the configured attempts with a redacted last_error; after the fix, the CLI retry delivers it and is audited', async () => {
    const ws = await seedWorkspace(t.owner);
    const id = randomUUID();
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload, max_attempts)
       values ($1, $2, 'outbox-test', 'outbox.test-effect', '{"marker":"dl"}', 3)`,
      [id, ws.workspaceId],
    );
    const failing = spawnNode('worker-failing', WORKER, roleEnv(t, { OUTBOX_TEST_EFFECT_MODE: 'fail' }));
    await failing.waitForOutput(/worker ready/);
    const dispatcher = spawnNode('dispatcher', DISPATCHER, roleEnv(t));

    const dead = await waitUntil('the event to be dead-lettered', async () => {
      const { rows } = await t.owner.query(
        `select * from outbox_events where id = $1 and status = 'dead_letter'`,
        [id],
      );
      return rows[0];
    });
    expect(dead.attempt_count).toBe(3);
    expect(dead.last_error).toContain('provider rejected dl');
    expect(dead.last_error).not.toMatch(/deadbeef01|s3cr3t-value|X-Amz-Signature/);
    expect(await effectCount(t.owner, id)).toBe(0);

    const env = roleEnv(t);
    const listed = await runCli(env, ['dead-letters', 'list', '--json']);
    expect(listed.code).toBe(0);
    const list = JSON.parse(listed.stdout) as Array<{
      id: string;
      workspaceId: string;
      attemptCount: number;
      lastError: string;
    }>;
    expect(list).toEqual([
      expect.objectContaining({
        id,
        workspaceId: ws.workspaceId,
        attemptCount: 3,
        lastError: dead.last_error,
      }),
    ]);
    expect(listed.stdout).not.toContain('marker'); // no payload leaves through the operator view

    const stats = await runCli(env, ['stats', '--json']);
    expect(stats.code).toBe(0);
    expect(JSON.parse(stats.stdout)).toEqual([
      { queue: 'outbox-test', pending: 0, dispatching: 0, deadLetter: 1, oldestPendingAgeMs: null },
    ]);

    // "Fix the handler": replace the worker.
    expect(await failing.stop()).toEqual({ code: 0, signal: null });
    const fixed = spawnNode('worker-fixed', WORKER, roleEnv(t));
    await fixed.waitForOutput(/worker ready/);

    const retried = await runCli(env, ['dead-letters', 'retry', id, '--actor', 'alice']);
    expect(retried).toMatchObject({ code: 0 });
    expect(JSON.parse(retried.stdout)).toEqual({ retried: [id] });

    await waitUntil('the retried event to take effect', async () => (await effectCount(t.owner, id)) === 1);
    await waitUntil('the event to be dispatched', async () => {
      const { rows } = await t.owner.query(`select status from outbox_events where id = $1`, [id]);
      return rows[0].status === 'dispatched';
    });
    const { rows: audit } = await t.owner.query(
      `select workspace_id, actor, action, entity_type, metadata from audit_events where entity_id = $1`,
      [id],
    );
    expect(audit).toEqual([
      {
        workspace_id: ws.workspaceId,
        actor: 'operator',
        action: 'OUTBOX_EVENT_RETRIED',
        entity_type: 'outbox_event',
        metadata: {
          operator: 'alice',
          queue: 'outbox-test',
          type: 'outbox.test-effect',
          previousAttempts: 3,
        },
      },
    ]);
    // Retrying something that is not a dead letter is refused with a code.
    const again = await runCli(env, ['dead-letters', 'retry', id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('OUTBOX_NOT_DEAD_LETTER');

    expect(await dispatcher.stop()).toEqual({ code: 0, signal: null });
    expect(await fixed.stop()).toEqual({ code: 0, signal: null });
  });

  describe('without a dispatcher running (what the CLI reads and writes stays put)', () => {
    let a: string;
    let b: string;
    const ids = { a1: randomUUID(), a2: randomUUID(), b1: randomUUID() };

    beforeAll(async () => {
      await killAll(); // an earlier test that failed may have left its dispatcher running
      await t.owner.query('delete from outbox_events');
      a = (await seedWorkspace(t.owner, 'cli-a')).workspaceId;
      b = (await seedWorkspace(t.owner, 'cli-b')).workspaceId;
      // Dead letters in two queues and two workspaces, oldest first (the order they are retried in).
      const dead = [
        { id: ids.a1, ws: a, queue: 'q-cli-a', attempts: 3, ageMin: 30 },
        { id: ids.a2, ws: b, queue: 'q-cli-a', attempts: 5, ageMin: 20 },
        { id: ids.b1, ws: a, queue: 'q-cli-b', attempts: 2, ageMin: 10 },
      ];
      for (const d of dead) {
        await t.owner.query(
          `insert into outbox_events (id, workspace_id, queue, event_type, payload, status, attempt_count,
                                      last_error, updated_at)
           values ($1, $2, $3, 'cli.event', '{}', 'dead_letter', $4, 'it failed', now() - make_interval(mins => $5))`,
          [d.id, d.ws, d.queue, d.attempts, d.ageMin],
        );
      }
      // A backlog in a third queue: two pending, the oldest an hour old, and one in flight.
      await t.owner.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload, created_at, next_attempt_at)
         values (gen_random_uuid(), $1, 'q-cli-pending', 'cli.event', '{}', now() - interval '1 hour', now() + interval '1 hour'),
                (gen_random_uuid(), $2, 'q-cli-pending', 'cli.event', '{}', now() - interval '10 minutes', now() + interval '1 hour')`,
        [a, b],
      );
      await t.owner.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload, status, locked_by, locked_until)
         values (gen_random_uuid(), $1, 'q-cli-pending', 'cli.event', '{}', 'dispatching', 'ghost', now() + interval '1 hour')`,
        [a],
      );
    });

    const retryAudit = async () =>
      (
        await t.owner.query(
          `select entity_id, workspace_id, actor, metadata from audit_events
            where action = 'OUTBOX_EVENT_RETRIED' and entity_id = any($1::uuid[]) order by entity_id`,
          [Object.values(ids)],
        )
      ).rows;
    /** The audit rows expected, in the order retryAudit() reads them. */
    const byEntity = <T extends { entity_id: string }>(rows: T[]) =>
      [...rows].sort((x, y) => (x.entity_id < y.entity_id ? -1 : 1)); // uuid order: lower-case hex
    const statusOf = async (id: string) =>
      (await t.owner.query(`select status, attempt_count, last_error from outbox_events where id = $1`, [id]))
        .rows[0];

    it('stats: per queue, pending (with the age of the oldest), in flight and dead', async () => {
      const json = await runCli(roleEnv(t), ['stats', '--json']);
      expect(json.code).toBe(0);
      const stats = JSON.parse(json.stdout) as Array<{ queue: string; oldestPendingAgeMs: number | null }>;
      expect(stats).toEqual([
        { queue: 'q-cli-a', pending: 0, dispatching: 0, deadLetter: 2, oldestPendingAgeMs: null },
        { queue: 'q-cli-b', pending: 0, dispatching: 0, deadLetter: 1, oldestPendingAgeMs: null },
        {
          queue: 'q-cli-pending',
          pending: 2,
          dispatching: 1,
          deadLetter: 0,
          oldestPendingAgeMs: expect.any(Number),
        },
      ]);
      // The oldest pending event's age (an hour, in ms), not the newest one's (10 minutes).
      const age = stats[2]!.oldestPendingAgeMs!;
      expect(age).toBeGreaterThanOrEqual(3_600_000);
      expect(age).toBeLessThan(4_200_000);

      const text = await runCli(roleEnv(t), ['stats']);
      expect(text.code).toBe(0);
      const lines = text.stdout.trim().split('\n');
      expect(lines[0]).toBe('queue\tpending\toldest_pending_age_s\tdispatching\tdead_letter');
      expect(lines.slice(1, 3)).toEqual(['q-cli-a\t0\t-\t0\t2', 'q-cli-b\t0\t-\t0\t1']);
      const [queue, pending, ageS, dispatching, deadLetter] = lines[3]!.split('\t');
      expect([queue, pending, dispatching, deadLetter]).toEqual(['q-cli-pending', '2', '1', '0']);
      expect(ageS).toMatch(/^\d+\.\d$/); // seconds, one decimal
      expect(Number(ageS)).toBeGreaterThanOrEqual(3600);
      expect(Number(ageS)).toBeLessThan(4200);
      expect(lines).toHaveLength(4);
    });

    it('dead-letters retry --all --queue retries that queue only (any workspace), --all the rest; each retry audited', async () => {
      const env = roleEnv(t);
      // --queue names no event: refused, nothing retried.
      const bare = await runCli(env, ['dead-letters', 'retry', '--queue', 'q-cli-a']);
      expect(bare.code).toBe(2);
      expect(bare.stderr).toContain('needs an event id or --all');
      expect(await retryAudit()).toEqual([]);

      const queueOnly = await runCli(env, [
        'dead-letters',
        'retry',
        '--all',
        '--queue',
        'q-cli-a',
        '--actor',
        'bob',
      ]);
      expect(queueOnly.code).toBe(0);
      expect(JSON.parse(queueOnly.stdout)).toEqual({ retried: [ids.a1, ids.a2] });
      for (const id of [ids.a1, ids.a2]) {
        expect(await statusOf(id)).toEqual({ status: 'pending', attempt_count: 0, last_error: null });
      }
      expect(await statusOf(ids.b1)).toEqual({
        status: 'dead_letter',
        attempt_count: 2,
        last_error: 'it failed',
      });
      const retried = (id: string, workspace: string, operator: string, queue: string, previous: number) => ({
        entity_id: id,
        workspace_id: workspace,
        actor: 'operator',
        metadata: { operator, queue, type: 'cli.event', previousAttempts: previous },
      });
      expect(await retryAudit()).toEqual(
        byEntity([retried(ids.a1, a, 'bob', 'q-cli-a', 3), retried(ids.a2, b, 'bob', 'q-cli-a', 5)]),
      );

      const all = await runCli(env, ['dead-letters', 'retry', '--all', '--actor', 'carol']);
      expect(all.code).toBe(0);
      expect(JSON.parse(all.stdout)).toEqual({ retried: [ids.b1] }); // the only dead letter left
      expect(await statusOf(ids.b1)).toEqual({ status: 'pending', attempt_count: 0, last_error: null });
      expect(await retryAudit()).toEqual(
        byEntity([
          retried(ids.a1, a, 'bob', 'q-cli-a', 3),
          retried(ids.a2, b, 'bob', 'q-cli-a', 5),
          retried(ids.b1, a, 'carol', 'q-cli-b', 2),
        ]),
      );

      const none = await runCli(env, ['dead-letters', 'retry', '--all']);
      expect(none.code).toBe(0);
      expect(JSON.parse(none.stdout)).toEqual({ retried: [] });
      expect(await retryAudit()).toHaveLength(3);
    });
  });
});
