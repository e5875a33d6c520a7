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
});
