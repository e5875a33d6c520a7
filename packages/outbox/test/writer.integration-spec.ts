import { Database, sql } from '@listing/db';
import { seedWorkspace, sentQueries, useTestDatabase } from '@listing/testing';
import { z } from 'zod';
import {
  DEFAULT_MAX_ATTEMPTS,
  defineJob,
  OutboxError,
  OutboxNudger,
  OutboxRepository,
  OutboxWriter,
} from '../src';

const t = useTestDatabase();

describe('OutboxWriter', () => {
  let ws: string;
  const published: string[] = [];
  const nudger = new OutboxNudger(
    { publish: async (channel) => published.push(channel) },
    'test:outbox:nudge',
  );
  let writer: OutboxWriter;
  const tick = () => new Promise((r) => setImmediate(r));

  beforeAll(async () => {
    ws = (await seedWorkspace(t.owner)).workspaceId;
    writer = new OutboxWriter(t.db, { nudger });
  });
  beforeEach(async () => {
    published.length = 0;
    await t.owner.query('delete from outbox_events');
  });

  const event = { queue: 'q-writer', type: 'writer.event', payload: { orderId: 'o-1', version: 3 } };

  it('refuses to run outside an ambient transaction', async () => {
    await expect(writer.append(event)).rejects.toMatchObject({ code: 'DB_NOT_IN_TRANSACTION' });
  });

  it('refuses a transaction without a workspace', async () => {
    await expect(t.db.transaction(() => writer.append(event))).rejects.toMatchObject({
      code: 'OUTBOX_NO_WORKSPACE',
    });
  });

  it('commits the event with the business transaction and nudges only after the commit', async () => {
    const { id } = await t.db.withWorkspace(ws, async () => {
      const r = await writer.append(event);
      await writer.append({ ...event, payload: { orderId: 'o-2' } });
      await tick();
      expect(published).toEqual([]); // nothing sent while the transaction is open
      return r;
    });
    await tick();
    expect(published).toEqual(['test:outbox:nudge']); // two appends, one coalesced nudge
    const { rows } = await t.owner.query(`select * from outbox_events where id = $1`, [id]);
    expect(rows[0]).toMatchObject({
      workspace_id: ws,
      queue: 'q-writer',
      event_type: 'writer.event',
      status: 'pending',
      attempt_count: 0,
      max_attempts: DEFAULT_MAX_ATTEMPTS,
      payload: { orderId: 'o-1', version: 3 },
    });
  });

  it("the writer's default attempts are the column's default, which rows inserted by hand get", async () => {
    const { rows } = await t.owner.query<{ d: string }>(
      `select column_default as d from information_schema.columns
        where table_name = 'outbox_events' and column_name = 'max_attempts'`,
    );
    expect(rows[0]?.d).toBe(String(DEFAULT_MAX_ATTEMPTS));
  });

  it('rides with the COMMIT round trip; a failing event insert rolls the business rows back too', async () => {
    const countEvents = async () =>
      (await t.db.executor.execute<{ n: number }>(sql`select count(*)::int as n from outbox_events`)).rows[0]!
        .n;
    await t.db.withWorkspace(ws, async () => {
      await writer.append(event);
      expect(await countEvents()).toBe(0); // queued for COMMIT, no round trip of its own
    });
    expect((await t.owner.query('select count(*)::int as n from outbox_events')).rows[0].n).toBe(1);

    // A duplicate event id fails at COMMIT: nothing of the transaction is left, no nudge.
    const id = '0190f0e0-0000-7000-8000-000000000001';
    await t.db.withWorkspace(ws, () => writer.append({ ...event, id }));
    await tick();
    published.length = 0;
    const auditId = '0190f0e0-0000-7000-8000-0000000000aa';
    await expect(
      t.db.withWorkspace(ws, async () => {
        const business = await t.db.executor.execute(
          sql`insert into audit_events (workspace_id, id, action, entity_type) values (${ws}, ${auditId}, 'test', 'order')`,
        );
        expect(business.rowCount).toBe(1);
        await writer.append({ ...event, id });
      }),
    ).rejects.toMatchObject({ code: '23505' });
    await tick();
    expect(published).toEqual([]);
    expect((await t.owner.query('select 1 from audit_events where id = $1', [auditId])).rowCount).toBe(0);
  });

  it('sends the event insert with COMMIT as EXECUTE of a statement the connection plans once (pooled: inlined)', async () => {
    // One new connection: its first insert must prepare the statement, its second must not.
    const db = new Database({ connectionString: t.info.appUrl, max: 1, preparedStatements: !t.info.pooled });
    const repository = new OutboxRepository(db);
    const later = new Date(Date.now() + 3_600_000);
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const row = (id: string, extra: Partial<Parameters<OutboxRepository['insert']>[0]> = {}) => ({
      id,
      workspaceId: ws,
      queue: 'q-writer',
      type: 'writer.event',
      payload: { note: "it's", n: 1 },
      maxAttempts: 7,
      availableAt: null,
      traceparent: null,
      tracestate: null,
      ...extra,
    });
    const [plain, traced] = ['0190f0e0-0000-7000-8000-0000000000b1', '0190f0e0-0000-7000-8000-0000000000b2'];
    const { queries } = await sentQueries(async () => {
      await db.withWorkspace(ws, () => repository.insert(row(plain)));
      await db.withWorkspace(ws, () =>
        repository.insert(row(traced, { availableAt: later, traceparent, tracestate: 'k=v' })),
      );
    }).finally(() => db.close());
    const commits = queries.filter((q) => q.endsWith('COMMIT'));
    expect(commits).toHaveLength(2);
    if (t.info.pooled) {
      // Behind a transaction pooler a session-level statement would land on another client's server.
      for (const c of commits)
        expect(c).toMatch(/\nINSERT INTO outbox_events[\s\S]*"it''s"[\s\S]*;\nCOMMIT$/);
      expect(queries.some((q) => /^(PREPARE|DO \$prepare\$)/.test(q))).toBe(false);
    } else {
      for (const c of commits) expect(c).toMatch(/;\nEXECUTE s_outbox_insert_event\([\s\S]*\)\n;\nCOMMIT$/);
      // The text goes only in a connection's one-time PREPARE, never in a transaction's messages.
      const texts = queries.filter((q) => q.includes('INSERT INTO outbox_events'));
      expect(texts).toEqual([
        expect.stringMatching(
          /^DO \$prepare\$ DECLARE want text := 'PREPARE s_outbox_insert_event AS INSERT INTO outbox_events/,
        ),
      ]);
    }
    const { rows } = await t.owner.query(
      `select id, payload, max_attempts, traceparent, tracestate,
              next_attempt_at = created_at as due_at_commit, next_attempt_at
         from outbox_events where id = any($1) order by id`,
      [[plain, traced]],
    );
    expect(rows).toEqual([
      expect.objectContaining({ id: plain, payload: { note: "it's", n: 1 }, max_attempts: 7 }),
      expect.objectContaining({ id: traced, traceparent, tracestate: 'k=v', next_attempt_at: later }),
    ]);
    expect(rows[0]).toMatchObject({ traceparent: null, tracestate: null, due_at_commit: true });
  });

  it('inserts at once when the workspace binding ends before COMMIT (nested in an unbound transaction)', async () => {
    const seen = await t.db.transaction(async () => {
      const n = await t.db.withWorkspace(ws, async () => {
        await writer.append(event);
        return (await t.db.executor.execute<{ n: number }>(sql`select count(*)::int as n from outbox_events`))
          .rows[0]!.n;
      });
      return n;
    });
    expect(seen).toBe(1); // inserted inside the binding, where RLS lets it
    expect((await t.owner.query('select count(*)::int as n from outbox_events')).rows[0].n).toBe(1);
  });

  it('generates time-ordered (v7) event ids', async () => {
    const ids = await t.db.withWorkspace(ws, async () => {
      const out: string[] = [];
      for (let i = 0; i < 5; i++) {
        out.push((await writer.append(event)).id);
        await new Promise((r) => setTimeout(r, 2));
      }
      return out;
    });
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    await tick(); // let this test's nudge go out before the next test watches
  });

  it('rolls back with the business transaction and never nudges then', async () => {
    await expect(
      t.db.withWorkspace(ws, async () => {
        await writer.append(event);
        throw new Error('business failure');
      }),
    ).rejects.toThrow('business failure');
    await tick();
    expect(published).toEqual([]);
    expect((await t.owner.query('select count(*)::int as n from outbox_events')).rows[0].n).toBe(0);
  });

  it('rejects secret-looking payloads at any depth, naming the path but not the value', async () => {
    const error = await t.db
      .withWorkspace(ws, () =>
        writer.append({
          ...event,
          payload: { order: { items: [{ sku: 'a', download: 'https://s3/x?X-Amz-Signature=zz' }] } },
        }),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboxError);
    expect(error).toMatchObject({ code: 'OUTBOX_PAYLOAD_REJECTED' });
    expect((error as Error).message).toContain('order.items[0].download');
    expect((error as Error).message).not.toContain('zz');
    await expect(
      t.db.withWorkspace(ws, () => writer.append({ ...event, payload: { store: { apiKey: 'k' } } })),
    ).rejects.toMatchObject({ code: 'OUTBOX_PAYLOAD_REJECTED' });
  });

  it('appendJob validates the payload with the job schema and uses its queue and name', async () => {
    const job = defineJob({
      name: 'media.process',
      queue: 'media',
      schema: z.object({ mediaId: z.string().uuid() }),
      maxAttempts: 4,
    });
    await expect(
      t.db.withWorkspace(ws, () => writer.appendJob(job, { mediaId: 'nope' })),
    ).rejects.toMatchObject({
      code: 'OUTBOX_INVALID_EVENT',
    });
    const mediaId = '7d0c7c1e-3b8a-4c55-9a59-5b7f3b8e0c11';
    const { id } = await t.db.withWorkspace(ws, () => writer.appendJob(job, { mediaId }));
    const row = await t.db.withWorkspace(
      ws,
      async () =>
        (
          await t.db.executor.execute(
            sql`select queue, event_type, max_attempts from outbox_events where id = ${id}`,
          )
        ).rows[0],
    );
    expect(row).toEqual({ queue: 'media', event_type: 'media.process', max_attempts: 4 });
  });
});
