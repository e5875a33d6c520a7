import { Queue } from 'bullmq';
import type { RedisClient } from '@listing/outbox';
import type { TestDatabaseHandle } from '@listing/testing';
import { waitUntil } from '../outbox/processes';
import type { ApiClient, RegisteredUser } from './api-client';

export interface OperationBody {
  id: string;
  status: 'pending' | 'running' | 'succeeded' | 'failed';
  error: { code: string; message: string } | null;
  [field: string]: unknown;
}

/**
 * What the real-process stacks (capabilities, media) share: a registered user on the API, the
 * BullMQ queues under this file's prefix, waits on operations and forced redeliveries. A subclass
 * starts the processes, sets `user` and connects `redis`.
 */
export abstract class ProcessStack {
  user!: RegisteredUser;
  protected redis?: RedisClient;
  private readonly queues = new Map<string, Queue>();

  constructor(protected readonly t: TestDatabaseHandle) {}

  get client(): ApiClient {
    return this.user.client;
  }

  ws(rest: string): string {
    return `/v1/workspaces/${this.user.workspaceId}${rest}`;
  }

  async waitForOperation(
    operationId: string,
    status: OperationBody['status'] = 'succeeded',
    timeoutMs = 30_000,
  ) {
    return waitUntil(
      `operation ${operationId} to be ${status}`,
      async () => {
        const res = await this.client.get<OperationBody>(this.ws(`/operations/${operationId}`));
        if (res.status !== 200) throw new Error(`GET operation → ${res.status} ${res.text}`);
        if (res.body.status === status) return res.body;
        if (res.body.status === 'succeeded' || res.body.status === 'failed') {
          throw new Error(
            `operation ${operationId} ended ${res.body.status}: ${JSON.stringify(res.body.error)}`,
          );
        }
        return undefined;
      },
      timeoutMs,
      100,
    );
  }

  queue(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.redis!, prefix: this.t.info.bullPrefix });
      this.queues.set(name, q);
    }
    return q;
  }

  /**
   * Forces a redelivery of an already processed event: waits until BullMQ completed the job,
   * removes it (so BullMQ cannot deduplicate), and puts the outbox event back to pending, so the
   * real dispatcher enqueues it again under the same job id; resolves with the second delivery's
   * return value once the worker finished it.
   */
  async redeliver(eventId: string, queueName: string): Promise<unknown> {
    const queue = this.queue(queueName);
    await waitUntil('the first delivery to complete', async () => (await queue.getJob(eventId))?.finishedOn);
    await waitUntil(
      'the event to be marked dispatched',
      async () =>
        (await this.t.owner.query(`select status from outbox_events where id = $1`, [eventId])).rows[0]
          ?.status === 'dispatched',
    );
    expect(await queue.remove(eventId)).toBe(1);
    await this.t.owner.query(
      `update outbox_events set status = 'pending', next_attempt_at = now(), dispatched_at = null, locked_by = null, locked_until = null where id = $1`,
      [eventId],
    );
    const job = await waitUntil('the redelivered job to complete', async () => {
      const j = await queue.getJob(eventId);
      return j?.finishedOn ? j : undefined;
    });
    expect(job.failedReason).toBeFalsy();
    return job.returnvalue;
  }

  /** Closes the queues opened by `queue` and the Redis connection. */
  protected async closeQueues(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await this.redis?.quit();
  }
}
