import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Pool } from 'pg';
import { waitFor, type Probe, type TestDatabaseHandle } from '@listing/testing';

export const API_DIR = path.resolve(__dirname, '..', '..');

export interface Spawned {
  readonly child: ChildProcess;
  readonly name: string;
  output(): string;
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Sends a signal (default SIGTERM) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<Spawned>();

/** Spawns `node <script>` from apps/api with the given environment; output is captured. */
export function spawnNode(name: string, script: string, env: Record<string, string | undefined>): Spawned {
  const child = spawn(process.execPath, [script], {
    cwd: API_DIR,
    env: { PATH: process.env.PATH, ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const spawned: Spawned = {
    child,
    name,
    output: () => out,
    exited,
    async waitForOutput(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(out)) {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`${name} exited before printing ${pattern}:\n${out}`);
        }
        if (Date.now() > deadline) throw new Error(`${name} did not print ${pattern}:\n${out}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  running.add(spawned);
  void exited.then(() => running.delete(spawned));
  return spawned;
}

/** SIGKILLs whatever a test file left running (afterAll). */
export async function killAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop('SIGKILL')));
}

export function roleEnv(t: TestDatabaseHandle, extra: Record<string, string | undefined> = {}) {
  return {
    NODE_ENV: 'test',
    DATABASE_URL: t.info.appUrl,
    DATABASE_POOL_SIZE: '6',
    REDIS_URL: t.info.redisUrl,
    BULLMQ_PREFIX: t.info.bullPrefix,
    OUTBOX_TEST_JOBS: '1',
    OUTBOX_POLL_INTERVAL_MS: '200',
    OUTBOX_HANDLER_BACKOFF_MS: '50',
    ...t.info.processEnv,
    ...extra,
  };
}

export const DISPATCHER = 'dist/dispatcher.js';
export const WORKER = 'dist/worker.js';
export const CLI = 'dist/cli.js';

/** Runs the CLI to completion. */
export async function runCli(env: Record<string, string | undefined>, args: string[]) {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: API_DIR,
    env: { PATH: process.env.PATH, ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stdout, stderr };
}

/**
 * The tables the test-only job and fixture write (created as the owner; RLS like every tenant
 * table). Idempotent: a test file may call it from several tests.
 */
export async function createTestTables(owner: Pool): Promise<void> {
  await owner.query(`
    create table if not exists outbox_test_effects (
      id bigserial primary key,
      workspace_id uuid not null references workspaces (id),
      event_id uuid not null,
      marker text not null,
      started_at timestamptz,
      created_at timestamptz not null default now());
    alter table outbox_test_effects enable row level security;
    alter table outbox_test_effects force row level security;
    drop policy if exists workspace_isolation on outbox_test_effects;
    create policy workspace_isolation on outbox_test_effects
      using (workspace_id = app_current_workspace()) with check (workspace_id = app_current_workspace());
    create table if not exists outbox_test_business (
      id uuid primary key,
      workspace_id uuid not null references workspaces (id),
      marker text not null);
    alter table outbox_test_business enable row level security;
    alter table outbox_test_business force row level security;
    drop policy if exists workspace_isolation on outbox_test_business;
    create policy workspace_isolation on outbox_test_business
      using (workspace_id = app_current_workspace()) with check (workspace_id = app_current_workspace());`);
}

export async function effectCount(owner: Pool, eventId: string): Promise<number> {
  const { rows } = await owner.query(
    `select count(*)::int as n from outbox_test_effects where event_id = $1`,
    [eventId],
  );
  return rows[0].n;
}

/** Inserts `n` test-effect events (markers `${tag}1`…) straight into the outbox; their ids. */
export async function insertTestEvents(owner: Pool, workspaceId: string, n: number, tag: string) {
  const { rows } = await owner.query<{ id: string }>(
    `insert into outbox_events (id, workspace_id, queue, event_type, payload)
     select gen_random_uuid(), $1, 'outbox-test', 'outbox.test-effect', jsonb_build_object('marker', $2 || g)
       from generate_series(1, $3::int) g returning id`,
    [workspaceId, tag, n],
  );
  return rows.map((r) => r.id);
}

/** How many of the events are dispatched (neither pending again nor dead-lettered). */
export async function dispatchedCount(owner: Pool, ids: string[]): Promise<number> {
  const { rows } = await owner.query(
    `select count(*)::int as n from outbox_events where id = any($1::uuid[]) and status = 'dispatched'`,
    [ids],
  );
  return rows[0].n;
}

/** The test effects of the events: rows written and distinct events they belong to. */
export async function effectTotals(owner: Pool, ids: string[]): Promise<{ n: number; events: number }> {
  const { rows } = await owner.query(
    `select count(*)::int as n, count(distinct event_id)::int as events from outbox_test_effects
      where event_id = any($1::uuid[])`,
    [ids],
  );
  return rows[0];
}

/** A free port on 127.0.0.1. */
export { freeTcpPort as freePort } from '@listing/testing';

/** `waitFor` with a 30 s default timeout: these waits span real process start-ups. */
export function waitUntil<T>(
  what: string,
  probe: Probe<T>,
  timeoutMs = 30_000,
  intervalMs?: number,
): Promise<T> {
  return waitFor(what, probe, timeoutMs, intervalMs);
}

export interface TraceLine {
  id: string;
  by: string;
  at: number;
  leaseUntil: number;
}

export function parseTrace(text: string): TraceLine[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as TraceLine);
}
