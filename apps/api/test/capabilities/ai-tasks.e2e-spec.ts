import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { waitUntil } from '../outbox/processes';
import { CapabilityStack, type OperationBody } from './stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

interface AiTask {
  id: string;
  kind: string;
  status: string;
  executionId: string;
  resultRevision: number | null;
  result: Record<string, unknown> | null;
}
interface AiTaskBody {
  aiTask: AiTask;
  operation: OperationBody;
}

/** AI tasks over HTTP with real api, dispatcher, worker and platform-sim processes. */
describe('capability: AI text / category / image tasks (real processes)', () => {
  const stack = new CapabilityStack(t);
  const secrets: string[] = [];
  const outputs: string[] = [];

  beforeAll(async () => {
    await stack.start();
    await stack.activeStore(secrets); // credentials exist in this database too, for the scan
  });
  afterAll(() => stack.stop());

  const createTask = (body: Record<string, unknown>, key = randomUUID()) =>
    stack.client.post<AiTaskBody>(stack.ws('/ai-tasks'), body, { key });
  const vendorKey = (id: string) => `ai-task-${id}`;
  const task = async (id: string) => (await stack.client.get<AiTask>(stack.ws(`/ai-tasks/${id}`))).body;
  const draftAt = async (id: string) =>
    (
      await stack.client.get<{ revision: number; data: Record<string, unknown> }>(
        stack.ws(`/product-drafts/${id}`),
      )
    ).body;

  it('text: billed once, attached as a feature execution and a new draft revision; replay returns the first body; a forced redelivery bills nothing', async () => {
    const draft = await stack.draft({ title: 'Linen shirt' });
    const key = randomUUID();
    const body = {
      kind: 'text',
      draftId: draft.id,
      revision: 1,
      target: 'description',
      prompt: 'Describe the shirt',
    };
    const first = await createTask(body, key);
    expect(first.status).toBe(202);
    expect(first.body.aiTask).toMatchObject({
      status: 'pending',
      kind: 'text',
      result: null,
      resultRevision: null,
    });
    expect(first.body.operation).toMatchObject({ status: 'pending', kind: 'ai-task.text' });

    await stack.waitForOperation(first.body.operation.id);
    const done = await task(first.body.aiTask.id);
    expect(done).toMatchObject({ status: 'succeeded', resultRevision: 2 });
    const text = done.result!.text as string;
    expect(text).toMatch(/^Generated/);
    outputs.push(text);
    expect((await draftAt(draft.id)).data).toMatchObject({ title: 'Linen shirt', description: text });
    const exec = await t.owner.query(
      `select mode, status, base_revision, result_revision from feature_executions where id = $1`,
      [done.executionId],
    );
    expect(exec.rows[0]).toEqual({
      mode: 'outbox',
      status: 'SUCCEEDED', // as stored; the API answers it lower case
      base_revision: 1,
      result_revision: 2,
    });
    expect(await stack.admin.countersFor(vendorKey(done.id))).toMatchObject({
      aiCalls: 1,
      billingEntries: 1,
    });

    const replay = await createTask(body, key);
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);

    const event = await stack.eventFor('aiTaskId', done.id);
    expect(await stack.redeliver(event.id, event.queue)).toMatchObject({ result: { outcome: 'skipped' } });
    expect(await stack.admin.countersFor(vendorKey(done.id))).toMatchObject({
      aiCalls: 1,
      billingEntries: 1,
    });
    expect((await draftAt(draft.id)).revision).toBe(2);
    expect(await task(done.id)).toEqual(done);

    const list = await stack.client.get<{ items: AiTask[] }>(stack.ws('/ai-tasks'));
    expect(list.body.items.map((i) => i.id)).toContain(done.id);
  });

  it('category sets the draft categoryId in a new revision; image keeps the draft as is and records the result', async () => {
    const draft = await stack.draft({ title: 'Garden chair' });
    const category = await createTask({ kind: 'category', draftId: draft.id, revision: 1 });
    const image = await createTask({ kind: 'image', draftId: draft.id, revision: 1 });
    expect(category.status).toBe(202);
    expect(image.status).toBe(202);
    await stack.waitForOperation(category.body.operation.id);
    await stack.waitForOperation(image.body.operation.id);
    const c = await task(category.body.aiTask.id);
    const i = await task(image.body.aiTask.id);
    outputs.push(c.result!.categoryId as string, i.result!.imageUrl as string);
    expect(c.resultRevision).toBe(2);
    expect((await draftAt(draft.id)).data.categoryId).toBe(c.result!.categoryId);
    expect(i).toMatchObject({ status: 'succeeded', resultRevision: null });
    expect(i.result!.imageUrl).toMatch(/\/platform\/v1\/media\/ai-/);
    for (const id of [c.id, i.id]) {
      expect(await stack.admin.countersFor(vendorKey(id))).toMatchObject({ aiCalls: 1, billingEntries: 1 });
    }
  });

  it('a generated title cut to 200 characters never splits an emoji (the cut half is text PostgreSQL cannot store)', async () => {
    const draft = await stack.draft({ title: 'Emoji lamp' });
    // the simulator answers "Generated: <prompt>": the emoji straddles character 200
    const prompt = `${'x'.repeat(188)}😀y`;
    const res = await createTask({ kind: 'text', draftId: draft.id, revision: 1, target: 'title', prompt });
    expect(res.status).toBe(202);
    await stack.waitForOperation(res.body.operation.id);
    expect(await task(res.body.aiTask.id)).toMatchObject({ status: 'succeeded', resultRevision: 2 });
    const title = (await draftAt(draft.id)).data.title as string;
    expect(title).toBe(`Generated: ${'x'.repeat(188)}`);
  });

  it('a result made from an older revision never overwrites a field edited since; other fields still take it', async () => {
    const draft = await stack.draft({ title: 'Desk', description: 'A' });
    const patch = (body: Record<string, unknown>, rev: number) =>
      stack.client.request('PATCH', stack.ws(`/product-drafts/${draft.id}`), {
        body,
        headers: { 'if-match': `"${rev}"` },
      });
    expect((await patch({ description: 'B (edited by hand)' }, 1)).status).toBe(200);
    const stale = await createTask({ kind: 'text', draftId: draft.id, revision: 1, target: 'description' });
    await stack.waitForOperation(stale.body.operation.id);
    const kept = await task(stale.body.aiTask.id);
    expect(kept).toMatchObject({ status: 'succeeded', resultRevision: null });
    expect(kept.result!.text).toMatch(/^Generated/); // there for the client to apply by hand
    expect(await draftAt(draft.id)).toMatchObject({
      revision: 2,
      data: { description: 'B (edited by hand)' },
    });

    // the title was not edited since revision 1: a title task made from revision 1 still applies
    const title = await createTask({ kind: 'text', draftId: draft.id, revision: 1, target: 'title' });
    await stack.waitForOperation(title.body.operation.id);
    expect(await task(title.body.aiTask.id)).toMatchObject({ status: 'succeeded', resultRevision: 3 });
    expect(await draftAt(draft.id)).toMatchObject({
      revision: 3,
      data: { title: expect.stringMatching(/^Generated/), description: 'B (edited by hand)' },
    });
    // the hand edit is the user's, the applied result the system's (on the user's behalf)
    const { rows } = await t.owner.query(
      `select revision, actor, actor_user_id is not null as has_user from audit_events
        where entity_id = $1 and action = 'RECORD_UPDATED' order by revision`,
      [draft.id],
    );
    expect(rows).toEqual([
      { revision: 2, actor: 'user', has_user: true },
      { revision: 3, actor: 'system', has_user: true },
    ]);
    const skipped = await t.owner.query(
      `select metadata from audit_events where entity_id = $1 and action = 'FEATURE_AI_TEXT_SUCCEEDED'
        and revision is null`,
      [draft.id],
    );
    expect(skipped.rows[0].metadata).toMatchObject({
      notApplied: 'description',
      reason: 'EDITED_SINCE_BASE_REVISION',
    });
  });

  it('the vendor bills and drops the response: the retry with the same key is a free replay, the task is billed once', async () => {
    const draft = await stack.draft({ title: 'Dropped AI answer' });
    await stack.admin.setFaults({ dropResponseRate: 1, routes: ['POST /ai/v1/*'] });
    const res = await createTask({ kind: 'text', draftId: draft.id, revision: 1 });
    expect(res.status).toBe(202);
    const key = vendorKey(res.body.aiTask.id);
    await waitUntil(
      'the vendor to bill the call',
      async () => (await stack.admin.countersFor(key)).billingEntries === 1,
    );
    await stack.admin.clearFaults();
    await stack.waitForOperation(res.body.operation.id);
    const counters = await stack.admin.countersFor(key);
    expect(counters.aiCalls).toBeGreaterThanOrEqual(2);
    expect(counters.billingEntries).toBe(1);
    outputs.push((await task(res.body.aiTask.id)).result!.text as string);
    // Billed AI calls = AI tasks.
    const { rows } = await t.owner.query(
      `select count(*)::int as n from ai_tasks where status = 'succeeded'`,
    );
    expect((await stack.admin.counters()).billingEntries).toBe(rows[0].n);
  });

  it('an unknown draft revision is a 404; validation errors are 422', async () => {
    const draft = await stack.draft();
    expect((await createTask({ kind: 'text', draftId: draft.id, revision: 9 })).status).toBe(404);
    expect(
      (await createTask({ kind: 'image', draftId: draft.id, revision: 1, target: 'title' })).status,
    ).toBe(422);
  });

  it('keeps AI output out of idempotency rows and audit, and credentials out of everything', async () => {
    const { rows } = await t.owner.query(`
      select response_envelope::text as text from idempotency_requests
      union all select metadata::text || action from audit_events`);
    expect(outputs.length).toBeGreaterThan(0);
    for (const output of outputs) expect(rows.filter((r) => r.text.includes(output))).toEqual([]);
    await stack.assertNoSecrets(secrets);
  });
});
