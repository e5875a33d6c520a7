import { sql } from '@listing/db';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { z } from 'zod';
import { DeadLetterReactor, defineJob, JobRegistry, OutboxRepository } from '../src';
import { insertEvents } from './helpers';

const t = useTestDatabase();

const job = defineJob({
  name: 'test.reacted',
  queue: 'q-reacted',
  schema: z.object({ n: z.number().int() }),
});
const silent = defineJob({ name: 'test.silent', queue: 'q-reacted', schema: z.object({ n: z.number() }) });

/**
 * Each dead letter's reaction runs once, in a transaction bound to its workspace, together with
 * the record that it ran; several reactors share the work; a failing reaction is tried again.
 */
describe('DeadLetterReactor (real PostgreSQL)', () => {
  let ws: { workspaceId: string };
  let calls: Array<{ n: number; eventId: string; workspace: string | null }>;
  let failOn: number | null;

  const registry = () =>
    new JobRegistry()
      .handle(job, async () => undefined)
      .handle(silent, async () => undefined)
      .onDeadLetter(job, async (payload, ctx) => {
        // Runs under row-level security, bound to the event's workspace.
        const bound = await t.agentDb.executor.execute<{ w: string | null }>(
          sql`select app_current_workspace()::text as w`,
        );
        if (payload.n === failOn) throw new Error(`reaction for ${payload.n} broke: password=hunter2`);
        calls.push({ n: payload.n, eventId: ctx.eventId, workspace: bound.rows[0]!.w });
      });

  /** `count` dead letters of `type` in the workspace (payload {n: 1..count}). */
  async function deadLetters(count: number, type = job.name): Promise<string[]> {
    const ids = await insertEvents(t.owner, ws.workspaceId, count, { queue: job.queue, type });
    await t.owner.query(
      `update outbox_events set status = 'dead_letter', last_error = 'gave up' where id = any($1)`,
      [ids],
    );
    return ids;
  }
  const unhandled = async (ids: string[]) =>
    (
      await t.owner.query<{ n: number }>(
        `select count(*)::int as n from outbox_events where id = any($1) and dead_letter_handled_at is null`,
        [ids],
      )
    ).rows[0]!.n;

  beforeAll(async () => {
    ws = await seedWorkspace(t.owner);
  });
  beforeEach(async () => {
    calls = [];
    failOn = null;
    await t.owner.query('delete from outbox_events');
  });

  it('reacts once per dead letter, bound to its workspace; jobs without a reaction are only recorded', async () => {
    const ids = await deadLetters(3);
    const quiet = await deadLetters(2, silent.name);
    const reactor = new DeadLetterReactor({ db: t.agentDb, registry: registry() });
    expect(await reactor.run()).toBe(5);
    expect(calls.map((c) => c.n).sort()).toEqual([1, 2, 3]);
    expect(new Set(calls.map((c) => c.eventId))).toEqual(new Set(ids));
    expect(calls.every((c) => c.workspace === ws.workspaceId)).toBe(true);
    expect(await unhandled([...ids, ...quiet])).toBe(0);
    expect(await reactor.run()).toBe(0);
    expect(calls).toHaveLength(3);
  });

  it('two reactors at once: every dead letter reacted to exactly once', async () => {
    const ids = await deadLetters(40);
    const [a, b] = await Promise.all([
      new DeadLetterReactor({ db: t.agentDb, registry: registry() }).run(),
      new DeadLetterReactor({ db: t.agentDb, registry: registry() }).run(),
    ]);
    expect(a + b).toBe(40);
    expect(calls.map((c) => c.n).sort((x, y) => x - y)).toEqual(ids.map((_, i) => i + 1));
  });

  it('a reaction that throws rolls back only its own event, is logged redacted, and runs again next time', async () => {
    const ids = await deadLetters(3);
    failOn = 2;
    const logged: string[] = [];
    const logger = {
      info: () => undefined,
      warn: () => undefined,
      error: (message: string, fields?: Record<string, unknown>) =>
        logged.push(`${message} ${JSON.stringify(fields)}`),
    };
    const reactor = new DeadLetterReactor({ db: t.agentDb, registry: registry(), logger });
    expect(await reactor.run()).toBe(2);
    expect(calls.map((c) => c.n).sort()).toEqual([1, 3]);
    expect(await unhandled(ids)).toBe(1);
    expect(logged.join('\n')).toContain('reaction failed');
    expect(logged.join('\n')).not.toContain('hunter2');

    failOn = null;
    expect(await new DeadLetterReactor({ db: t.agentDb, registry: registry() }).run()).toBe(1);
    expect(calls.map((c) => c.n).sort()).toEqual([1, 2, 3]);
    expect(await unhandled(ids)).toBe(0);
  });

  it("an operator's retry clears the record: a second dead letter of the event gets its own reaction", async () => {
    const [id] = await deadLetters(1);
    await new DeadLetterReactor({ db: t.agentDb, registry: registry() }).run();
    const retried = await t.agentDb.withWorkspace(ws.workspaceId, () =>
      new OutboxRepository(t.agentDb).retryDeadLetter(id!),
    );
    expect(retried).not.toBeNull();
    expect(await unhandled([id!])).toBe(1); // pending again, record cleared
    await t.owner.query(`update outbox_events set status = 'dead_letter' where id = $1`, [id]);
    await new DeadLetterReactor({ db: t.agentDb, registry: registry() }).run();
    expect(calls).toHaveLength(2);
  });

  it('workspaces whose reactions keep failing do not hide the others (one pass in workspace id order)', async () => {
    failOn = 1;
    const broken = await Promise.all(Array.from({ length: 105 }, () => seedWorkspace(t.owner)));
    for (const w of broken) {
      const [id] = await insertEvents(t.owner, w.workspaceId, 1, { queue: job.queue, type: job.name });
      await t.owner.query(`update outbox_events set status = 'dead_letter' where id = $1`, [id]);
    }
    // n = 2 in the good workspace: its reaction works.
    const good = await insertEvents(t.owner, ws.workspaceId, 2, { queue: job.queue, type: job.name });
    await t.owner.query(`update outbox_events set status = 'dead_letter' where id = $1`, [good[1]]);
    const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
    expect(await new DeadLetterReactor({ db: t.agentDb, registry: registry(), logger }).run()).toBe(1);
    expect(calls.map((c) => c.n)).toEqual([2]);
  });

  it('a dead letter of a job this process does not know is left for a worker that knows it', async () => {
    const ids = await deadLetters(1, 'test.from-a-newer-version');
    expect(await new DeadLetterReactor({ db: t.agentDb, registry: registry() }).run()).toBe(0);
    expect(await unhandled(ids)).toBe(1);
  });

  it('a dead letter whose payload this version cannot read is left unhandled (and said loudly), not recorded as handled', async () => {
    const ids = await deadLetters(2);
    await t.owner.query(`update outbox_events set payload = '{"n":"one"}' where id = $1`, [ids[0]]);
    const errors: string[] = [];
    const logger = {
      info: () => undefined,
      warn: () => undefined,
      error: (msg: string) => errors.push(msg),
    };
    expect(await new DeadLetterReactor({ db: t.agentDb, registry: registry(), logger }).run()).toBe(1);
    expect(calls.map((c) => c.eventId)).toEqual([ids[1]]);
    expect(await unhandled([ids[0]!])).toBe(1);
    expect(errors).toEqual([expect.stringMatching(/cannot read/)]);
  });

  it('the api role cannot list workspaces with dead letters (outbox_agent only)', async () => {
    await expect(
      t.db.executor.execute(sql`select outbox_unhandled_dead_letter_workspaces(null, 10)`),
    ).rejects.toMatchObject({ cause: expect.objectContaining({ code: '42501' }) });
  });
});
