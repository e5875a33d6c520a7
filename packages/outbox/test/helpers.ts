import { randomUUID } from 'node:crypto';
import type { Job, JobState, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Pool } from 'pg';
import type { Database } from '@listing/db';
import { waitFor } from '@listing/testing';
import {
  JobRegistry,
  OutboxWorkerRuntime,
  connectProducerRedis,
  keyspaceNodes,
  type JobDefinition,
  type RedisClient,
  type RedisTarget,
  type WorkerRuntimeOptions,
} from '../src';

/** Inserts `count` pending events for one workspace as the owner (fixtures bypass RLS). */
export async function insertEvents(
  owner: Pool,
  workspaceId: string,
  count: number,
  options: { queue?: string; type?: string; maxAttempts?: number } = {},
): Promise<string[]> {
  const { rows } = await owner.query<{ id: string }>(
    `insert into outbox_events (id, workspace_id, queue, event_type, payload, max_attempts)
     select gen_random_uuid(), $1, $2, $3, jsonb_build_object('n', g), $5
       from generate_series(1, $4::integer) g
     returning id`,
    [workspaceId, options.queue ?? 'q-test', options.type ?? 'test.event', count, options.maxAttempts ?? 10],
  );
  return rows.map((r) => r.id);
}

export async function statusCounts(owner: Pool): Promise<Record<string, number>> {
  const { rows } = await owner.query<{ status: string; n: number }>(
    `select status, count(*)::int as n from outbox_events group by status`,
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** A producer-style client (one server or a cluster, as the run's Redis) connected when returned. */
export async function connectedRedis(target: RedisTarget): Promise<RedisClient> {
  const redis = connectProducerRedis(target);
  await new Promise<void>((resolve, reject) => {
    redis.once('ready', () => resolve());
    redis.once('error', reject);
  });
  return redis;
}

/** The shared poller (20 s default timeout). */
export { waitFor } from '@listing/testing';

/**
 * Waits for a job to reach `state`, then reads it. The state is read first: a job read before
 * its state can be a snapshot of the attempt still running (`attemptsMade` one short) that the
 * state check then vouches for.
 */
export function jobInState(queue: Queue, id: string, state: JobState): Promise<Job> {
  return waitFor(`job ${id} ${state}`, async () =>
    (await queue.getJobState(id)) === state ? queue.getJob(id) : undefined,
  );
}

export const uuid = randomUUID;

/**
 * A per-workspace counter table under RLS like every tenant table (the test jobs' database-only
 * effect): `n` is bumped by handlers, read back by the owner.
 */
export async function createCounterTable(owner: Pool, table: string): Promise<void> {
  if (!/^[a-z_]+$/.test(table)) throw new Error(`bad table name ${table}`);
  await owner.query(`
    create table ${table} (workspace_id uuid not null, name text not null, n int not null default 0,
                           primary key (workspace_id, name));
    alter table ${table} enable row level security;
    alter table ${table} force row level security;
    create policy workspace_isolation on ${table}
      using (workspace_id = app_current_workspace()) with check (workspace_id = app_current_workspace());`);
}

/**
 * A job whose worker "dies" mid-run: a runtime starts the job's handler, which never finishes, and
 * is killed (connections dropped, job left locked). With `maxStalledCount: 0` in `options`, the
 * next runtime's stall check fails the job. `release()` lets the orphaned handler end so its pooled
 * connection comes back; call it when the test is done.
 */
export async function stallJob(
  db: Database,
  options: Omit<WorkerRuntimeOptions, 'db' | 'registry'>,
  job: JobDefinition,
  dispatch: () => Promise<unknown>,
): Promise<{ release: () => void }> {
  let started = false;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const hanging = new OutboxWorkerRuntime({
    ...options,
    db,
    registry: new JobRegistry().handle(job, async () => {
      started = true;
      await released; // does not finish while its process "dies"
    }),
  });
  await hanging.start();
  await dispatch();
  await waitFor('the job to start', async () => started);
  await hanging.kill();
  return { release };
}

/** The server that answers for `key`: on a cluster the master not answering MOVED, else the one. */
export async function holderOf(redis: RedisClient, key: string): Promise<Redis> {
  for (const node of keyspaceNodes(redis)) {
    const holds = await node.get(key).then(
      () => true,
      (error: Error) => (/^MOVED/.test(error.message) ? false : Promise.reject(error)),
    );
    if (holds) return node;
  }
  throw new Error(`no server holds ${key}`);
}
