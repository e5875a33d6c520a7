import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { DEFAULT_BACKOFF, OutboxRepository } from '../src';
import { insertEvents } from './helpers';

const t = useTestDatabase();

describe('OutboxRepository: settling a claim', () => {
  it('release and markFailed settle only the claim they name, not a later claim of the same event', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const [id] = await insertEvents(t.owner, ws, 1, { maxAttempts: 1 });
    const repo = new OutboxRepository(t.agentDb);
    const inWorkspace = <T>(fn: () => Promise<T>) => t.agentDb.withWorkspace(ws, fn);
    const row = async () =>
      (await t.owner.query(`select status, attempt_count, locked_by from outbox_events where id = $1`, [id]))
        .rows[0] as unknown;

    const [first] = await repo.claim(ws, 'd1', 10, 1);
    await new Promise((r) => setTimeout(r, 5)); // the 1 ms lease expires
    expect(await inWorkspace(() => repo.reclaimExpired(ws, 10))).toBe(1);
    const [second] = await repo.claim(ws, 'd1', 10, 60_000);
    expect(second!.id).toBe(id);
    expect(second!.lease).not.toBe(first!.lease);
    // The lease is locked_until to the microsecond, which the Date keeps only to the millisecond.
    expect(BigInt(second!.lease) / 1000n).toBe(BigInt(second!.lockedUntil.getTime()));

    // The same dispatcher id, the earlier claim: nothing happens.
    expect(await inWorkspace(() => repo.release('d1', [first!]))).toBe(0);
    expect(await inWorkspace(() => repo.markFailed('d1', [first!], 'stale', DEFAULT_BACKOFF))).toEqual({
      retried: 0,
      deadLettered: 0,
    });
    expect(await row()).toEqual({ status: 'dispatching', attempt_count: 0, locked_by: 'd1' });
    // Another dispatcher naming the live claim: nothing either.
    expect(await inWorkspace(() => repo.release('d2', [second!]))).toBe(0);

    expect(await inWorkspace(() => repo.release('d1', [second!]))).toBe(1);
    expect(await row()).toEqual({ status: 'pending', attempt_count: 0, locked_by: null });
    const [third] = await repo.claim(ws, 'd1', 10, 60_000);
    expect(await inWorkspace(() => repo.markFailed('d1', [third!], 'failed', DEFAULT_BACKOFF))).toEqual({
      retried: 0,
      deadLettered: 1,
    });
  });
});
