import { randomUUID } from 'node:crypto';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import {
  InboxRepository,
  PermanentStepError,
  RemoteStepInTransactionError,
  runRemoteStep,
  SETTLED_ELSEWHERE,
  skip,
  type JobContext,
  type RemoteStep,
} from '../src';

const t = useTestDatabase();

type Outcome = { outcome: string };

/** A remote step whose phases the test scripts: what each returns or throws, and what ran. */
function scripted(script: {
  claim?: () => unknown;
  call?: () => Promise<string>;
  settle?: () => void;
  permanent?: boolean;
  failsOn?: 'any' | 'call';
}) {
  const ran: string[] = [];
  const step: RemoteStep<object, string, string, Outcome> = {
    failsOn: script.failsOn,
    claim: async () => {
      ran.push('claim');
      return (script.claim?.() ?? 'plan') as string;
    },
    call: async () => {
      ran.push('call');
      return script.call ? script.call() : 'result';
    },
    settle: async (_plan, result) => {
      ran.push(`settle:${result}`);
      script.settle?.();
      return { outcome: 'settled' };
    },
    permanent: (error) =>
      script.permanent && error instanceof Error ? { code: 'REFUSED', message: 'refused' } : undefined,
    exhausted: () => ({ code: 'EXHAUSTED', message: 'gave up' }),
    fail: async (_payload, { failure }) => {
      ran.push(`fail:${failure.code}`);
      return { outcome: `failed:${failure.code}` };
    },
  };
  return { step, ran };
}

describe('runRemoteStep (real PostgreSQL, the inbox)', () => {
  let workspaceId: string;
  beforeAll(async () => {
    workspaceId = (await seedWorkspace(t.owner, 'remote-step')).workspaceId;
  });

  /** A delivery of one event: the same event id and job name for every attempt. */
  const delivery = (eventId: string, attempt = 1, attempts = 3): JobContext =>
    ({
      eventId,
      workspaceId,
      attempt,
      job: { name: 'test.remote', opts: { attempts } },
      inboxOnce: (key?: string) => new InboxRepository(t.agentDb).record(workspaceId, key!, eventId),
    }) as unknown as JobContext;

  const inboxRows = async (eventId: string) =>
    (
      await t.owner.query<{ handler: string }>(
        'select handler from outbox_inbox where event_id = $1 order by handler',
        [eventId],
      )
    ).rows.map((r) => r.handler);

  it('claim → call → settle, recording the settlement in the inbox once', async () => {
    const eventId = randomUUID();
    const { step, ran } = scripted({});
    expect(await runRemoteStep(t.agentDb, step, {}, delivery(eventId))).toEqual({ outcome: 'settled' });
    expect(ran).toEqual(['claim', 'call', 'settle:result']);
    expect(await inboxRows(eventId)).toEqual(['test.remote:settle']);
    // A second delivery of the same event that gets as far: settles nothing.
    const again = scripted({});
    expect(await runRemoteStep(t.agentDb, again.step, {}, delivery(eventId))).toEqual(SETTLED_ELSEWHERE);
    expect(again.ran).toEqual(['claim', 'call']);
  });

  it('a success after another delivery of the event failed still settles (its transitions decide)', async () => {
    const eventId = randomUUID();
    const refused = scripted({ call: () => Promise.reject(new Error('no')), permanent: true });
    expect(await runRemoteStep(t.agentDb, refused.step, {}, delivery(eventId))).toEqual({
      outcome: 'failed:REFUSED',
    });
    const late = scripted({});
    expect(await runRemoteStep(t.agentDb, late.step, {}, delivery(eventId))).toEqual({ outcome: 'settled' });
    expect(await inboxRows(eventId)).toEqual(['test.remote:fail', 'test.remote:settle']);
    // But a second failure of the same event does not fail twice.
    const twice = scripted({ call: () => Promise.reject(new Error('no')), permanent: true });
    expect(await runRemoteStep(t.agentDb, twice.step, {}, delivery(eventId))).toEqual(SETTLED_ELSEWHERE);
  });

  it('transient errors retry until the last attempt, then fail with the exhausted failure', async () => {
    const eventId = randomUUID();
    const flaky = () => scripted({ call: () => Promise.reject(new Error('timeout')) });
    await expect(runRemoteStep(t.agentDb, flaky().step, {}, delivery(eventId, 1))).rejects.toThrow('timeout');
    expect(await inboxRows(eventId)).toEqual([]);
    const last = flaky();
    expect(await runRemoteStep(t.agentDb, last.step, {}, delivery(eventId, 3))).toEqual({
      outcome: 'failed:EXHAUSTED',
    });
  });

  it("a verdict thrown in claim fails at once; skip() ends without a call; failsOn 'call' leaves claim errors to the outbox", async () => {
    const verdict = scripted({
      claim: () => {
        throw new PermanentStepError({ code: 'GONE', message: 'gone' });
      },
    });
    expect(await runRemoteStep(t.agentDb, verdict.step, {}, delivery(randomUUID()))).toEqual({
      outcome: 'failed:GONE',
    });
    const skipped = scripted({ claim: () => skip({ outcome: 'skipped' }) });
    expect(await runRemoteStep(t.agentDb, skipped.step, {}, delivery(randomUUID()))).toEqual({
      outcome: 'skipped',
    });
    expect(skipped.ran).toEqual(['claim']);
    const broken = () => {
      throw new Error('a bug in claim');
    };
    const anyPhase = scripted({ claim: broken });
    expect(await runRemoteStep(t.agentDb, anyPhase.step, {}, delivery(randomUUID(), 3))).toEqual({
      outcome: 'failed:EXHAUSTED',
    });
    const callOnly = scripted({ claim: broken, failsOn: 'call' });
    await expect(runRemoteStep(t.agentDb, callOnly.step, {}, delivery(randomUUID(), 3))).rejects.toThrow(
      'a bug in claim',
    );
  });

  it('refuses to run inside a transaction (a job defined without transaction: false)', async () => {
    const { step, ran } = scripted({});
    await expect(
      t.agentDb.withWorkspace(workspaceId, () => runRemoteStep(t.agentDb, step, {}, delivery(randomUUID()))),
    ).rejects.toBeInstanceOf(RemoteStepInTransactionError);
    expect(ran).toEqual([]);
  });
});
