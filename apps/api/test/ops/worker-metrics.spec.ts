import type { OutboxWorkerRuntime } from '@listing/outbox';
import { DelayedError, type Job } from 'bullmq';
import pino from 'pino';
import { Registry } from 'prom-client';
import { instrumentWorkerRuntime } from '../../src/ops/metrics/outbox-process.metrics';

/** The metrics wrapper around the worker runtime's processor (pure wiring: a stub runtime). */
describe('instrumentWorkerRuntime', () => {
  const job = (name: string) =>
    ({ id: 'e1', name, queueName: 'q', data: {}, attemptsMade: 0, opts: { attempts: 3 } }) as unknown as Job;

  it("hands BullMQ's lock token to the runtime, and counts a postponed job as no failure", async () => {
    const tokens: Array<string | undefined> = [];
    const runtime = {
      process: async (j: Job, token?: string) => {
        tokens.push(token);
        if (j.name === 'unknown') throw new DelayedError();
        return { duplicate: false, result: null };
      },
    } as unknown as OutboxWorkerRuntime;
    const registry = new Registry();
    instrumentWorkerRuntime(registry, runtime, pino({ level: 'silent' }));

    await runtime.process(job('known'), 'lock-1');
    await expect(runtime.process(job('unknown'), 'lock-2')).rejects.toBeInstanceOf(DelayedError);
    expect(tokens).toEqual(['lock-1', 'lock-2']);
    const text = await registry.metrics();
    expect(text).toMatch(/listing_worker_jobs_total\{queue="q",job="known",outcome="completed"\} 1/);
    expect(text).toMatch(/listing_worker_jobs_total\{queue="q",job="unknown",outcome="postponed"\} 1/);
    expect(text).not.toMatch(/listing_worker_job_failures_total\{/);
  });
});
