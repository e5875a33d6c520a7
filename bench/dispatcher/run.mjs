/* global setTimeout, performance, URL */
// Outbox dispatcher benchmark (issue 4, item 4). One bounded run (~6 min) measures, on a
// dedicated database and a private BullMQ prefix:
//   A. 50,000 events end to end (committed in PostgreSQL → jobs in BullMQ) with one and with two
//      dispatcher processes (apps/api/dist/dispatcher.js), beside raw BullMQ addBulk of the same
//      jobs (batches of 500) in the same run, interleaved; ratio = dispatcher / raw.
//   B. commit → worker-start latency p50/p99 at steady rates (default 200, 400 and 1,000
//      events/s, one business transaction per event): BullMQ alone (the floor), the outbox with
//      the Redis nudge, a naive outbox (naive-dispatcher.mjs: one INSERT per commit, a
//      statement-level NOTIFY trigger, one claim → addBulk → mark loop) and polling only. The
//      worker is its own process (bench-worker.mjs). A mode named twice runs twice (interleaved);
//      the comparison table takes the medians.
//   C. claim time (claim 500 + mark) with 1,000,000 dispatched rows in the table vs an empty
//      history.
//   D. write-path cost of the wake-up signal: commits/s of (business row + outbox event)
//      transactions with no signal, with the post-commit Redis PUBLISH nudge, and with a
//      NOTIFY inside the transaction (the rejected design, for reference); and the naive
//      outbox's INSERTs with and without its NOTIFY trigger.
//   E. 20,000 events (--worker-events) commit → worker done, against raw BullMQ worker
//      throughput (a prefilled queue, and addBulk while the worker runs).
// Usage: node bench/dispatcher/run.mjs [--only throughput,latency,worker,write,claim]
//          [--events 50000] [--worker-events 20000] [--reps 3] [--rate 200,400,1000] [--latency-seconds 10]
//          [--latency-modes bullmq,nudge,nudge-eager,naive,poll] [--write-seconds 5] [--history 1000000]
// OUTBOX_* variables in the environment are passed to the dispatcher processes (tuning).
// Writes bench/dispatcher/last-run.json and last-run.md.
import { spawn, fork, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { cpus, totalmem, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { cpuMs, cpuSpentMs, procCpuAvailable } from '../lib/proc-cpu.mjs';
import { createRequire } from 'node:module';

// The workspace packages are CommonJS built by swc (`export *` is not visible to ESM named imports).
const require = createRequire(import.meta.url);
const { Database, sql } = require('@listing/db');
const {
  OutboxNudger,
  OutboxRepository,
  OutboxWriter,
  nudgeChannel,
  connectProducerRedis,
} = require('@listing/outbox');

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '50000' },
    'worker-events': { type: 'string', default: '20000' }, // part E
    reps: { type: 'string', default: '3' },
    'latency-seconds': { type: 'string', default: '10' },
    'write-seconds': { type: 'string', default: '5' },
    history: { type: 'string', default: '1000000' },
    rate: { type: 'string', default: '200,400,1000' }, // comma-separated
    only: { type: 'string' }, // throughput | latency | worker | write | claim
    'latency-modes': { type: 'string' }, // bullmq,nudge,nudge-eager,naive,poll,direct (twice = twice)
  },
});
const EVENTS = Number(args.events);
const REPS = Number(args.reps);
const ADMIN = process.env.ADMIN_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const APP_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://app_user:app_user@127.0.0.1:5432/listing_bench_dispatcher';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `bench-outbox-${Date.now().toString(36)}`;
const dbName = new URL(APP_URL).pathname.slice(1);
if (!/bench/.test(dbName)) throw new Error(`refusing database ${dbName}: the name must contain "bench"`);
const asRole = (role) => {
  const u = new URL(APP_URL);
  u.username = role;
  u.password = role;
  return u.toString();
};
const ownerUrl = asRole('listing_owner');
// The dispatcher's role (sql/012): the app role plus the outbox's cross-workspace functions.
const AGENT_URL = asRole('outbox_agent');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);

// ---------------------------------------------------------------------------------------------
async function setupDatabase() {
  for (const f of [
    'apps/api/dist/dispatcher.js',
    'packages/db/dist/setup-cli.js',
    'packages/outbox/dist/index.js',
  ]) {
    if (!existsSync(path.join(root, f))) throw new Error(`${f} is missing: run \`pnpm run build\` first`);
  }
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
  execFileSync(process.execPath, [path.join(root, 'packages/db/dist/setup-cli.js')], {
    env: { ...process.env, ADMIN_DATABASE_URL: ADMIN, DATABASE_URL: APP_URL, OUTBOX_DATABASE_URL: AGENT_URL },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

// Event ids as the writer makes them: UUID v7 (time-ordered), generated in SQL for bulk inserts.
const UUIDV7_SQL = `
  create or replace function bench_uuidv7() returns uuid language sql volatile as $$
    select encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing
      substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
      from 1 for 6), 52, 1), 53, 1), 'hex')::uuid
  $$`;

async function seedWorkspaces(owner, n) {
  await owner.query(UUIDV7_SQL);
  const ids = [];
  const user = randomUUID();
  await owner.query(`insert into users (id, email, password_hash) values ($1, $2, 'x')`, [
    user,
    `${user}@bench.test`,
  ]);
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    await owner.query(`insert into workspaces (id, name, created_by) values ($1, $2, $3)`, [
      id,
      `bench-${i}`,
      user,
    ]);
    ids.push(id);
  }
  return ids;
}

/** Inserts `total` pending events spread over the workspaces in ONE transaction; returns commit time. */
async function insertEvents(owner, workspaces, total, queue) {
  const per = Math.ceil(total / workspaces.length);
  const client = await owner.connect();
  try {
    await client.query('begin');
    for (const ws of workspaces) {
      await client.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload)
         select bench_uuidv7(), $1, $2, 'bench.event', jsonb_build_object('orderId', gen_random_uuid(), 'version', g)
           from generate_series(1, $3::integer) g`,
        [ws, queue, per],
      );
    }
    await client.query('commit');
    return { at: now(), count: per * workspaces.length };
  } finally {
    client.release();
  }
}

// Every child process, killed if the bench itself dies (a crash must not leave a dispatcher or a
// worker running against the bench database).
const children = new Set();
process.on('exit', () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function spawnDispatcher(name, extraEnv = {}) {
  // e.g. BENCH_DISPATCHER_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile it
  const nodeArgs = (process.env.BENCH_DISPATCHER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // BENCH_DISPATCHER_ROOT=<checkout>: that build's dispatcher instead (to price a change).
  const checkout = process.env.BENCH_DISPATCHER_ROOT ?? root;
  const child = spawn(process.execPath, [...nodeArgs, path.join(checkout, 'apps/api/dist/dispatcher.js')], {
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      DATABASE_URL: APP_URL,
      OUTBOX_DATABASE_URL: AGENT_URL,
      DATABASE_POOL_SIZE: '10',
      REDIS_URL,
      BULLMQ_PREFIX: PREFIX,
      OUTBOX_DISPATCHER_ID: name,
      OUTBOX_POLL_INTERVAL_MS: '200',
      ...extraEnv,
      // Tuning experiments: OUTBOX_* variables of the bench's own environment win.
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('OUTBOX_'))),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  return {
    child,
    output: () => out,
    async ready() {
      while (!/dispatcher ready/.test(out)) {
        if (child.exitCode !== null) throw new Error(`dispatcher exited:\n${out}`);
        await sleep(20);
      }
    },
    async stop() {
      child.kill('SIGTERM');
      const result = await exited;
      // BENCH_DISPATCHER_LOG=file: keep the dispatchers' output (e.g. with --trace-gc).
      if (process.env.BENCH_DISPATCHER_LOG) appendFileSync(process.env.BENCH_DISPATCHER_LOG, out);
      return result;
    },
  };
}

async function countStatus(owner, status) {
  const { rows } = await owner.query(`select count(*)::int as n from outbox_events where status = $1`, [
    status,
  ]);
  return rows[0].n;
}

// ---------------------------------------------------------------------------------------------
// A. end-to-end throughput vs raw addBulk
/** `count` jobs shaped as the dispatcher makes them (QueueProducer), for the raw BullMQ runs. */
function rawJobs(count) {
  const ws = randomUUID();
  return Array.from({ length: count }, (_, i) => ({
    name: 'bench.event',
    data: { v: 1, workspaceId: ws, payload: { orderId: randomUUID(), version: i }, createdAt: Date.now() },
    opts: {
      jobId: randomUUID(),
      attempts: 10,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 86400 },
      removeOnFail: { age: 604800 },
    },
  }));
}

async function rawAddBulk(redis, queueName, count) {
  const queue = new Queue(queueName, { connection: redis, prefix: PREFIX });
  const jobs = rawJobs(count);
  const t0 = now();
  for (let i = 0; i < jobs.length; i += 500) await queue.addBulk(jobs.slice(i, i + 500));
  const ms = now() - t0;
  await queue.obliterate({ force: true });
  await queue.close();
  return (count / ms) * 1000;
}

async function dispatcherRun(owner, redis, workspaces, processes, rep) {
  const queueName = `bench-e2e-${processes}-${rep}`;
  const ds = Array.from({ length: processes }, (_, i) => spawnDispatcher(`d${i}`));
  await Promise.all(ds.map((d) => d.ready()));
  await owner.query(`truncate outbox_events`);
  const { at, count } = await insertEvents(owner, workspaces, EVENTS, queueName);
  await redis.publish(nudgeChannel(PREFIX), '1');
  // Completion = every job is in BullMQ (a cheap Redis count, so the probe does not load
  // PostgreSQL); the marks are checked afterwards, untimed.
  const queue = new Queue(queueName, { connection: redis, prefix: PREFIX });
  let end = 0;
  for (;;) {
    const jobs = await queue.getJobCountByTypes('waiting');
    end = now();
    if (jobs >= count) break;
    await sleep(10);
  }
  const ms = end - at;
  while ((await countStatus(owner, 'dispatched')) < count) await sleep(50);
  await Promise.all(ds.map((d) => d.stop()));
  const jobs = await queue.getJobCountByTypes('waiting');
  await queue.obliterate({ force: true });
  await queue.close();
  if (jobs !== count) throw new Error(`expected ${count} jobs in BullMQ, found ${jobs}`);
  return (count / ms) * 1000;
}

// ---------------------------------------------------------------------------------------------
// B. commit → worker-start latency at a steady rate
const WARMUP_SECONDS = 5;
function forkWorker(
  queueName,
  { concurrency = Number(process.env.BENCH_WORKER_CONCURRENCY ?? 50), manual = false } = {},
) {
  const argv = [queueName, PREFIX, REDIS_URL, String(concurrency), manual ? 'manual' : 'auto'];
  const child = fork(path.join(here, 'bench-worker.mjs'), argv, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.add(child);
  const waiters = [];
  child.on('message', (m) => waiters.shift()?.(m));
  const next = () => new Promise((r) => waiters.push(r));
  const ready = next();
  return {
    pid: child.pid,
    ready,
    ask: (msg) => {
      const reply = next();
      child.send(msg);
      return reply;
    },
    tell: (msg) => child.send(msg),
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ cmd: 'stop' });
      await exited;
    },
  };
}

/**
 * CPU time (user + system, ms) of each process that takes part, read from /proc (Linux; null
 * elsewhere): the load generator (this process: the "API"), the dispatcher, the worker, Redis,
 * and the PostgreSQL backends grouped by application_name, plus PostgreSQL's background
 * processes. Two snapshots around the measured window give each one's share of the machine.
 */
async function cpuSnapshot(owner, redis, pids) {
  if (!procCpuAvailable) return null;
  const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
  const { rows } = await owner.query(
    // backend_type is hidden from an unprivileged role (the owner is one); datname is not, and is
    // null only for PostgreSQL's own background processes.
    `select pid, coalesce(nullif(application_name, ''), '?') as app, datname = $1 as ours,
            datname is null as background
       from pg_stat_activity where pid <> pg_backend_pid()`,
    [new URL(APP_URL).pathname.slice(1)],
  );
  const roles = new Map(); // role → (pid → ms)
  const add = (role, pid) => {
    const ms = cpuMs(pid);
    if (ms === null) return;
    if (!roles.has(role)) roles.set(role, new Map());
    roles.get(role).set(pid, ms);
  };
  add('load generator (Node: the "API")', process.pid);
  if (pids.dispatcher) add('dispatcher (Node)', pids.dispatcher);
  add('worker (Node, BullMQ)', pids.worker);
  if (redisPid) add('Redis', redisPid);
  for (const r of rows) {
    if (r.ours) add(`PostgreSQL backends of the ${r.app === 'bench' ? 'load generator' : r.app}`, r.pid);
    else if (r.background) add('PostgreSQL background processes', r.pid);
  }
  return { at: now(), roles };
}

function cpuShares(before, after, events) {
  if (!before || !after) return null;
  const seconds = (after.at - before.at) / 1000;
  const shares = [...after.roles.entries()]
    // a role whose every process started within the window: not counted
    .filter(([role, pids]) => [...pids.keys()].some((pid) => before.roles.get(role)?.has(pid)))
    .map(([role, pids]) => {
      const ms = cpuSpentMs(before.roles.get(role), pids);
      return { role, percent: (100 * ms) / 1000 / seconds, usPerEvent: (ms * 1000) / events };
    })
    .sort((a, b) => b.percent - a.percent);
  return { seconds, shares, totalPercent: shares.reduce((sum, x) => sum + x.percent, 0) };
}

/**
 * Generates `rate` events/s for `seconds`, each in its own business transaction (one outbox
 * event, one workspace of ten in turn), and measures commit → worker start in a separate worker
 * process. mode: 'nudge' (dispatcher + post-commit PUBLISH), 'poll' (dispatcher polling only),
 * or 'bullmq' (no PostgreSQL: the generator adds each job to BullMQ itself; the floor that the
 * BullMQ hop alone costs on this machine).
 */
async function latencyRun(appDb, owner, workspaces, { seconds, rate, mode, pollMs }) {
  const queueName = `bench-latency-${mode}`;
  const nudged = mode === 'nudge' || mode === 'nudge-eager';
  const d =
    mode === 'bullmq' || mode === 'direct' || mode === 'naive'
      ? null
      : spawnDispatcher('latency', {
          OUTBOX_NUDGE: nudged ? 'redis' : 'off',
          OUTBOX_POLL_INTERVAL_MS: String(pollMs),
        });
  await d?.ready();
  const naive = mode === 'naive' ? forkNaiveDispatcher(queueName) : null;
  await naive?.ready;
  const worker = forkWorker(queueName);
  await worker.ready;
  const publisher = connectProducerRedis({ url: REDIS_URL });
  await new Promise((r) => publisher.once('ready', r));
  const writer = new OutboxWriter(
    appDb,
    nudged ? { nudger: new OutboxNudger(publisher, nudgeChannel(PREFIX), nudgeGapMs(mode)) } : {},
  );
  const queue = new Queue(queueName, { connection: publisher, prefix: PREFIX });
  const committed = new Map();
  const produce = (i) => {
    if (mode === 'bullmq') {
      const id = randomUUID();
      return queue.add('bench.latency', { seq: i }, { jobId: id }).then(() => record(i, id));
    }
    if (mode === 'naive') {
      return naivePool
        .query('insert into naive_outbox (payload) values ($1) returning id', [{ seq: i }])
        .then(({ rows }) => record(i, `naive-${rows[0].id}`));
    }
    const ws = workspaces[i % workspaces.length];
    return appDb
      .withWorkspace(ws, () =>
        writer.append({ queue: queueName, type: 'bench.latency', payload: { seq: i } }),
      )
      .then(({ id }) =>
        mode === 'direct'
          ? (record(i, id), queue.add('bench.latency', { seq: i }, { jobId: id }))
          : record(i, id),
      );
  };
  // The first `warmup` seconds at the same rate are not measured: the processes' connection
  // pools fill, plpgsql plans and the JIT warm up (the first seconds run at 10-100 ms otherwise).
  const warmupEvents = Math.round(WARMUP_SECONDS * rate);
  let produced = 0;
  const record = (i, id) => {
    produced++;
    if (i >= warmupEvents) committed.set(id, now());
  };
  const total = warmupEvents + seconds * rate;
  const t0 = now() + 200;
  const inflight = new Set();
  let errors = 0;
  const pids = { dispatcher: d?.child.pid ?? naive?.pid, worker: worker.pid };
  let cpuBefore = null;
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - now();
    if (wait > 1) await sleep(wait - 0.5);
    if (i === warmupEvents) cpuBefore = await cpuSnapshot(owner, publisher, pids);
    const p = produce(i).catch((error) => {
      if (!errors++)
        log(`  ${mode}: a generator transaction failed (counted, not measured): ${error.stack ?? error}`);
    });
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  }
  const cpu = cpuShares(cpuBefore, await cpuSnapshot(owner, publisher, pids), seconds * rate);
  await Promise.all(inflight);
  const { done } = await Promise.race([
    worker.ask({ cmd: 'expect', count: produced }),
    sleep(15_000).then(() => ({ done: 'timeout' })),
  ]);
  const { started } = await worker.ask({ cmd: 'collect' });
  const startedById = new Map(
    started.map(([id, at, enqueuedAt, activeAt]) => [id, { at, enqueuedAt, activeAt }]),
  );
  const lat = [];
  const toEnqueue = [];
  const toStart = [];
  // enqueue → start split where the worker took the job: its moveToActive call (processedOn,
  // the worker's clock in ms) and the handler's start after it (BullMQ fetches up to its
  // concurrency ahead before it runs the first of them).
  const toActive = [];
  const activeToStart = [];
  const dump = [];
  for (const [id, c] of committed) {
    const s = startedById.get(id);
    if (!s) continue;
    dump.push([c, s.enqueuedAt, s.at, s.activeAt]);
    lat.push(s.at - c);
    toEnqueue.push(s.enqueuedAt - c);
    toStart.push(s.at - s.enqueuedAt);
    toActive.push(s.activeAt - s.enqueuedAt);
    activeToStart.push(s.at - s.activeAt);
  }
  // BENCH_LATENCY_DUMP=dir: every sample as [committed, enqueued (ms), started, active (ms)] per run, to look
  // at the tail over time.
  if (process.env.BENCH_LATENCY_DUMP) {
    mkdirSync(process.env.BENCH_LATENCY_DUMP, { recursive: true });
    writeFileSync(
      path.join(process.env.BENCH_LATENCY_DUMP, `latency-${mode}-${rate}.json`),
      JSON.stringify(dump),
    );
  }
  await worker.stop();
  await d?.stop();
  await naive?.stop();
  await queue.obliterate({ force: true });
  await queue.close();
  publisher.disconnect();
  await owner.query(`truncate outbox_events, naive_outbox`);
  if (done === 'timeout') log(`  ${mode}: only ${lat.length}/${committed.size} jobs started within 15 s`);
  return {
    mode,
    pollMs,
    rate,
    seconds,
    samples: lat.length,
    committed: committed.size,
    errors,
    p50: pct(lat, 50),
    p90: pct(lat, 90),
    p99: pct(lat, 99),
    max: Math.max(...lat),
    commitToEnqueueP50: pct(toEnqueue, 50),
    enqueueToStartP50: pct(toStart, 50),
    enqueueToActiveP99: pct(toActive, 99),
    activeToStartP99: pct(activeToStart, 99),
    cpu,
  };
}

/** naive-dispatcher.mjs for `queueName`, as the owner (the naive table has no RLS). */
function forkNaiveDispatcher(queueName) {
  const child = fork(path.join(here, 'naive-dispatcher.mjs'), [ownerUrl, queueName, PREFIX, REDIS_URL], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.add(child);
  return {
    pid: child.pid,
    ready: new Promise((r) => child.once('message', r)),
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ cmd: 'stop' });
      await exited;
    },
  };
}

/** The naive outbox's table, its statement-level NOTIFY trigger, and a twin without it (D). */
const NAIVE_SQL = `
  create table naive_outbox (id bigserial primary key, payload jsonb not null,
    created_at timestamptz not null default now(), dispatched_at timestamptz);
  create index naive_outbox_pending on naive_outbox (id) where dispatched_at is null;
  create table naive_outbox_plain (like naive_outbox including all);
  create function naive_outbox_notify() returns trigger language plpgsql as $$
    begin perform pg_notify('naive_outbox', ''); return null; end $$;
  create trigger naive_outbox_notify after insert on naive_outbox
    for each statement execute function naive_outbox_notify();`;
/** The naive writers' connections (as the owner; application_name bench: the load generator). */
let naivePool;

// ---------------------------------------------------------------------------------------------
// E. end to end (commit → worker done) vs raw BullMQ worker throughput
const WORKER_EVENTS = Number(args['worker-events']);

/**
 * Raw BullMQ, two ways. prefilled: a worker process drains WORKER_EVENTS jobs added beforehand
 * (clock from 'go'; the worker alone on the machine). pipelined: the bench adds them with
 * addBulk (batches of 500) while the worker runs (clock from the first add to the last job
 * done), the BullMQ-only counterpart of the outbox path.
 */
async function workerRaw(redis, rep, mode) {
  const queueName = `bench-worker-raw-${mode}-${rep}`;
  const queue = new Queue(queueName, { connection: redis, prefix: PREFIX });
  const jobs = rawJobs(WORKER_EVENTS);
  const addAll = async () => {
    for (let i = 0; i < jobs.length; i += 500) await queue.addBulk(jobs.slice(i, i + 500));
  };
  if (mode === 'prefilled') await addAll();
  const worker = forkWorker(queueName, { manual: mode === 'prefilled' });
  await worker.ready;
  const done = worker.ask({ cmd: 'expect', count: WORKER_EVENTS });
  const t0 = now();
  if (mode === 'prefilled') worker.tell({ cmd: 'go' });
  else await addAll();
  const { at } = await done;
  await worker.stop();
  await queue.obliterate({ force: true });
  await queue.close();
  return (WORKER_EVENTS / (at - t0)) * 1000;
}

/** The same number of events committed in PostgreSQL; clock from the commit to the last job done. */
async function workerEndToEnd(owner, redis, workspaces, rep) {
  const queueName = `bench-worker-e2e-${rep}`;
  const d = spawnDispatcher('e2e');
  await d.ready();
  const worker = forkWorker(queueName);
  await worker.ready;
  await owner.query(`truncate outbox_events`);
  const done = worker.ask({ cmd: 'expect', count: WORKER_EVENTS });
  const { at: committedAt, count } = await insertEvents(owner, workspaces, WORKER_EVENTS, queueName);
  await redis.publish(nudgeChannel(PREFIX), '1');
  const { at } = await done;
  await worker.stop();
  await d.stop();
  const queue = new Queue(queueName, { connection: redis, prefix: PREFIX });
  await queue.obliterate({ force: true });
  await queue.close();
  return (count / (at - committedAt)) * 1000;
}

// ---------------------------------------------------------------------------------------------
// C. claim time vs dispatched history
async function claimTimes(appDb, owner, ws, rounds) {
  const repo = new OutboxRepository(appDb);
  const times = [];
  for (let r = 0; r < rounds; r++) {
    await owner.query(`delete from outbox_events where status <> 'dispatched'`);
    await owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload)
       select bench_uuidv7(), $1, 'bench-claim', 'bench.event', jsonb_build_object('n', g) from generate_series(1, 5000) g`,
      [ws],
    );
    await owner.query(`analyze outbox_events`);
    for (let i = 0; i < 10; i++) {
      const t0 = now();
      const claimed = await repo.claim(ws, 'bench', 500, 30_000);
      await repo.markDispatched(
        ws,
        'bench',
        claimed.map((e) => e.id),
      );
      times.push(now() - t0);
      if (claimed.length !== 500) throw new Error(`claimed ${claimed.length}`);
    }
    // the 5,000 just dispatched would grow the history: remove them so both cases stay comparable
    await owner.query(`delete from outbox_events where queue = 'bench-claim'`);
  }
  const discovery = [];
  for (let i = 0; i < 50; i++) {
    const t0 = now();
    await repo.dueWorkspaces(null, 100);
    discovery.push(now() - t0);
  }
  return {
    p50: median(times),
    p90: pct(times, 90),
    samples: times.length,
    rowsPerSecond: 500 / (median(times) / 1000),
    discoveryP50: median(discovery),
  };
}

// ---------------------------------------------------------------------------------------------
// D. write path: commits/s with and without the wake-up signal
async function writePath(appDb, owner, workspaces, seconds, mode) {
  if (mode.startsWith('naive')) return naiveWritePath(owner, seconds, mode);
  const publisher = connectProducerRedis({ url: REDIS_URL });
  await new Promise((r) => publisher.once('ready', r));
  const nudger = new OutboxNudger(publisher, nudgeChannel(`${PREFIX}-write`), nudgeGapMs('nudge'));
  const writer = new OutboxWriter(appDb, mode === 'publish' ? { nudger } : {});
  let commits = 0;
  const end = now() + seconds * 1000;
  const client = async (c) => {
    const ws = workspaces[c % workspaces.length];
    while (now() < end) {
      await appDb.withWorkspace(ws, async () => {
        await writer.append({
          queue: 'bench-write',
          type: 'bench.write',
          payload: { orderId: randomUUID() },
        });
        if (mode === 'notify') await appDb.executor.execute(notifySql);
      });
      commits++;
    }
  };
  const t0 = now();
  await Promise.all(Array.from({ length: 8 }, (_, c) => client(c)));
  const rate = (commits / (now() - t0)) * 1000;
  publisher.disconnect();
  await owner.query(`truncate outbox_events`);
  return { mode, commitsPerSecond: rate, publishes: nudger.sent };
}
let notifySql;

/** The naive outbox's write path: one INSERT per commit, with its NOTIFY trigger or without. */
async function naiveWritePath(owner, seconds, mode) {
  const table = mode === 'naive-notify' ? 'naive_outbox' : 'naive_outbox_plain';
  let commits = 0;
  const end = now() + seconds * 1000;
  const client = async () => {
    while (now() < end) {
      await naivePool.query(`insert into ${table} (payload) values ($1)`, [{ orderId: randomUUID() }]);
      commits++;
    }
  };
  const t0 = now();
  await Promise.all(Array.from({ length: 8 }, () => client()));
  const rate = (commits / (now() - t0)) * 1000;
  await owner.query(`truncate ${table}`);
  return { mode, commitsPerSecond: rate };
}

// ---------------------------------------------------------------------------------------------
async function main() {
  const started = new Date();
  log(`setting up ${dbName}`);
  await setupDatabase();
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 4 });
  // pool.end() resolves before its connections are gone; the final DROP ... WITH (FORCE) may then
  // terminate one, which must not turn a finished run into a crash.
  owner.on('error', () => undefined);
  const appDb = new Database({ connectionString: APP_URL, max: 8, applicationName: 'bench' });
  // The claim measurements (C) call the dispatcher's repository: the dispatcher's role.
  const agentDb = new Database({ connectionString: AGENT_URL, max: 2, applicationName: 'bench-claim' });
  notifySql = sql`select pg_notify('outbox_bench', '')`;
  await owner.query(NAIVE_SQL);
  naivePool = new pg.Pool({ connectionString: ownerUrl, max: 8, application_name: 'bench' });
  naivePool.on('error', () => undefined); // see owner above
  const redis = new Redis(REDIS_URL);
  // Steady state: this Redis run counts as swept for lost jobs (packages/outbox/src/
  // lost-job-recovery.ts), as in a deployment past its first start. Otherwise the dispatchers'
  // one-off sweeps of a new run (the second one two leases after the first) would walk the bench's
  // own events in the middle of a measurement. The periodic run-id check itself stays on.
  const runId = /^run_id:(\w+)/m.exec(await redis.info('server'))[1];
  const sweptKey = `${PREFIX}:outbox:swept-redis-run`;
  await redis.set(sweptKey, runId);
  const workspaces = await seedWorkspaces(owner, 10);
  const result = { started: started.toISOString(), events: EVENTS, reps: REPS, prefix: PREFIX };

  const run = (part) => !args.only || args.only.split(',').includes(part);
  if (run('throughput')) {
    log('A: raw addBulk vs dispatcher processes (interleaved)');
    const raw = [];
    const one = [];
    const two = [];
    for (let rep = 0; rep < REPS; rep++) {
      raw.push(await rawAddBulk(redis, `bench-raw-${rep}`, EVENTS));
      one.push(await dispatcherRun(owner, redis, workspaces, 1, rep));
      two.push(await dispatcherRun(owner, redis, workspaces, 2, rep));
      log(
        `  rep ${rep + 1}: raw ${raw.at(-1).toFixed(0)}/s, 1 dispatcher ${one.at(-1).toFixed(0)}/s, 2 dispatchers ${two.at(-1).toFixed(0)}/s`,
      );
    }
    result.throughput = {
      raw: { median: median(raw), all: raw },
      oneDispatcher: { median: median(one), all: one, ratio: median(one) / median(raw) },
      twoDispatchers: { median: median(two), all: two, ratio: median(two) / median(raw) },
    };
  }

  if (run('latency')) {
    const rates = args.rate.split(',').map(Number);
    const seconds = Number(args['latency-seconds']);
    const modes = (args['latency-modes'] ?? 'bullmq,nudge,naive,poll').split(',');
    result.latency = [];
    for (const rate of rates) {
      log(`B: commit → worker-start latency at ${rate} events/s`);
      for (const mode of modes) {
        const l = await latencyRun(appDb, owner, workspaces, {
          seconds: mode === 'poll' ? Math.min(3, seconds) : seconds,
          rate,
          mode,
          pollMs: mode === 'poll' ? 100 : 500,
        });
        result.latency.push(l);
        log(`  ${mode}: p50 ${l.p50.toFixed(2)} ms p99 ${l.p99.toFixed(2)} ms (${l.samples}/${l.committed})`);
      }
    }
  }

  if (run('worker')) {
    log(`E: ${WORKER_EVENTS} events commit → worker done vs raw BullMQ worker (interleaved)`);
    const prefilled = [];
    const pipelined = [];
    const e2e = [];
    for (let rep = 0; rep < REPS; rep++) {
      prefilled.push(await workerRaw(redis, rep, 'prefilled'));
      pipelined.push(await workerRaw(redis, rep, 'pipelined'));
      e2e.push(await workerEndToEnd(owner, redis, workspaces, rep));
      log(
        `  rep ${rep + 1}: raw worker prefilled ${prefilled.at(-1).toFixed(0)}/s, pipelined ${pipelined.at(-1).toFixed(0)}/s, end to end ${e2e.at(-1).toFixed(0)}/s`,
      );
    }
    result.worker = {
      events: WORKER_EVENTS,
      prefilled: { median: median(prefilled), all: prefilled },
      pipelined: { median: median(pipelined), all: pipelined },
      endToEnd: {
        median: median(e2e),
        all: e2e,
        ratioPrefilled: median(e2e) / median(prefilled),
        ratioPipelined: median(e2e) / median(pipelined),
      },
    };
  }

  if (run('write')) {
    log('D: write path with and without the wake-up signal');
    const write = [];
    const modes = ['none', 'publish', 'notify', 'naive-plain', 'naive-notify'];
    for (const mode of [...modes, ...modes]) {
      write.push(await writePath(appDb, owner, workspaces, Number(args['write-seconds']), mode));
      log(`  ${mode}: ${write.at(-1).commitsPerSecond.toFixed(0)} commits/s`);
    }
    const byMode = (m) => median(write.filter((w) => w.mode === m).map((w) => w.commitsPerSecond));
    result.writePath = {
      none: byMode('none'),
      publish: byMode('publish'),
      notify: byMode('notify'),
      naivePlain: byMode('naive-plain'),
      naiveNotify: byMode('naive-notify'),
      runs: write,
    };
  }

  if (run('claim')) {
    log('C: claim time, empty history');
    const empty = await claimTimes(agentDb, owner, workspaces[0], 3);
    log(`  p50 ${empty.p50.toFixed(2)} ms`);
    log(`C: inserting ${args.history} dispatched rows`);
    const history = Number(args.history);
    for (let i = 0; i < history; i += 200_000) {
      await owner.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload, status, dispatched_at, created_at)
       select bench_uuidv7(), ($1::uuid[])[1 + g % 10], 'bench-history', 'bench.event', jsonb_build_object('n', g),
              'dispatched', now() - interval '1 hour', now() - interval '1 hour'
         from generate_series(1, $2::integer) g`,
        [workspaces, Math.min(200_000, history - i)],
      );
    }
    await owner.query('vacuum analyze outbox_events');
    const full = await claimTimes(agentDb, owner, workspaces[0], 3);
    log(`  p50 ${full.p50.toFixed(2)} ms`);
    result.claim = { empty, withHistory: full, history, ratio: full.p50 / empty.p50 };
  }

  result.finished = new Date().toISOString();
  result.machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadavg: loadavg()
      .map((x) => x.toFixed(2))
      .join(' '),
  };
  const pg15 = await owner.query('show server_version');
  result.machine.postgres = pg15.rows[0].server_version;
  result.machine.redis = (await redis.info('server')).match(/redis_version:(\S+)/)?.[1];

  writeFileSync(path.join(here, 'last-run.json'), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(path.join(here, 'last-run.md'), markdown(result));
  process.stdout.write(markdown(result));
  await redis.del(sweptKey);
  await redis.quit();
  await appDb.close();
  await agentDb.close();
  await naivePool.end();
  await owner.end();
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}

/**
 * The writer's least time between two nudges: the API's default (OUTBOX_NUDGE_GAP_MS, 2 ms) unless
 * the environment sets it; 'nudge-eager' publishes once per commit, the design before the gap.
 */
function nudgeGapMs(mode) {
  return mode === 'nudge-eager' ? 0 : Number(process.env.OUTBOX_NUDGE_GAP_MS ?? 2);
}

const LATENCY_MODES = {
  bullmq: 'BullMQ alone: generator adds each job itself (floor, no PostgreSQL)',
  nudge: 'outbox: Redis PUBLISH nudge after commit, gathered over the nudge gap (+ % ms poll)',
  'nudge-eager': 'outbox: one Redis PUBLISH nudge per commit, no gap (+ % ms poll)',
  poll: 'outbox: polling only, every % ms',
  naive:
    'naive outbox: INSERT per commit, statement-level NOTIFY trigger, one claim 500 → addBulk → mark loop',
  direct:
    'generator commits, then adds the job itself (no dispatcher; lower bound of an enqueue-after-commit design)',
};

function markdown(r) {
  const f = (x, d = 0) => Number(x).toFixed(d);
  const out = [
    `# Last run (${r.started})`,
    '',
    `Machine: ${r.machine.cpus} cores (${r.machine.cpuModel}), ${r.machine.memGiB} GiB, Node ${r.machine.node}, PostgreSQL ${r.machine.postgres}, Redis ${r.machine.redis}; load average at end ${r.machine.loadavg}.`,
  ];
  const t = r.throughput;
  if (t) {
    out.push(
      '',
      `## A. ${r.events.toLocaleString('en')} events, PostgreSQL → BullMQ (medians of ${r.reps} interleaved reps)`,
      '',
      '| what | jobs/s | per rep | ratio to raw addBulk |',
      '|---|---:|---|---:|',
      `| raw BullMQ addBulk (batches of 500) | ${f(t.raw.median)} | ${t.raw.all.map((x) => f(x)).join(', ')} | 1.00 |`,
      `| one dispatcher process | ${f(t.oneDispatcher.median)} | ${t.oneDispatcher.all.map((x) => f(x)).join(', ')} | ${f(t.oneDispatcher.ratio, 2)} |`,
      `| two dispatcher processes | ${f(t.twoDispatchers.median)} | ${t.twoDispatchers.all.map((x) => f(x)).join(', ')} | ${f(t.twoDispatchers.ratio, 2)} |`,
    );
  }
  const l = r.latency;
  if (l) {
    out.push(
      '',
      '## B. commit → worker start (worker in its own process)',
      '',
      '| events/s | path | samples | p50 ms | p90 ms | p99 ms | max ms | commit→enqueue p50 | enqueue→start p50 | enqueue→active p99 | active→start p99 |',
      '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...l.map(
        (x) =>
          `| ${x.rate} | ${LATENCY_MODES[x.mode].replace('%', x.pollMs)} | ${x.samples}/${x.committed} | ${f(x.p50, 2)} | ${f(x.p90, 2)} | ${f(x.p99, 2)} | ${f(x.max, 1)} | ${f(x.commitToEnqueueP50, 1)} | ${f(x.enqueueToStartP50, 1)} | ${f(x.enqueueToActiveP99, 1)} | ${f(x.activeToStartP99, 1)} |`,
      ),
      '',
      'enqueue = the job object made in the adding process (BullMQ `timestamp`, ms); active = the',
      "worker's moveToActive call (`processedOn`, ms); start = the handler's first line.",
    );
    // The project's path against the naive reference, per rate (medians over repeated runs).
    const rates = [...new Set(l.map((x) => x.rate))];
    const med = (rate, mode, key) => {
      const xs = l.filter((x) => x.rate === rate && x.mode === mode).map((x) => x[key]);
      return xs.length ? median(xs) : null;
    };
    const compared = rates.filter(
      (rate) => med(rate, 'nudge', 'p99') !== null && med(rate, 'naive', 'p99') !== null,
    );
    if (compared.length) {
      out.push(
        '',
        'The project (nudge) against the naive outbox, same run (medians of the runs of each):',
        '',
        '| events/s | nudge p50 | naive p50 | nudge p99 | naive p99 | nudge max | naive max | p99 nudge ÷ naive |',
        '|---:|---:|---:|---:|---:|---:|---:|---:|',
        ...compared.map((rate) => {
          const v = (mode, key, d = 2) => f(med(rate, mode, key), d);
          return `| ${rate} | ${v('nudge', 'p50')} | ${v('naive', 'p50')} | ${v('nudge', 'p99')} | ${v('naive', 'p99')} | ${v('nudge', 'max', 1)} | ${v('naive', 'max', 1)} | ${f(med(rate, 'nudge', 'p99') / med(rate, 'naive', 'p99'), 2)} |`;
        }),
      );
    }
    // Where the CPU went during each measured window (share of one core; the machine has
    // cpus().length of them): a saturated machine explains a tail that no single hop does.
    const withCpu = l.filter((x) => x.cpu);
    if (withCpu.length) {
      out.push(
        '',
        `CPU during the measured windows (% of one core, ${cpus().length} cores in all; µs of CPU per event):`,
        '',
        '| events/s | path | total | by process |',
        '|---:|---|---:|---|',
        ...withCpu.map(
          (x) =>
            `| ${x.rate} | ${x.mode} | ${f(x.cpu.totalPercent, 0)} % | ${x.cpu.shares
              .filter((s) => s.percent >= 0.5)
              .map((s) => `${s.role} ${f(s.percent, 0)} % (${f(s.usPerEvent, 0)} µs)`)
              .join('; ')} |`,
        ),
      );
    }
  }
  const e = r.worker;
  if (e) {
    out.push(
      '',
      `## E. ${e.events.toLocaleString('en')} events, commit → worker done (one dispatcher, one worker process, concurrency 50; medians of ${r.reps} interleaved reps)`,
      '',
      '| what | jobs/s | per rep | end to end ÷ this |',
      '|---|---:|---|---:|',
      `| raw BullMQ, prefilled queue: the worker alone | ${f(e.prefilled.median)} | ${e.prefilled.all.map((x) => f(x)).join(', ')} | ${f(e.endToEnd.ratioPrefilled, 2)} |`,
      `| raw BullMQ, pipelined: addBulk while the worker runs | ${f(e.pipelined.median)} | ${e.pipelined.all.map((x) => f(x)).join(', ')} | ${f(e.endToEnd.ratioPipelined, 2)} |`,
      `| end to end: committed in PostgreSQL → dispatcher → worker done | ${f(e.endToEnd.median)} | ${e.endToEnd.all.map((x) => f(x)).join(', ')} | 1.00 |`,
    );
  }
  const c = r.claim;
  if (c) {
    out.push(
      '',
      `## C. claim 500 + mark (${c.empty.samples} samples each)`,
      '',
      '| history | p50 ms | p90 ms | rows/s at p50 | discovery p50 ms |',
      '|---|---:|---:|---:|---:|',
      `| empty | ${f(c.empty.p50, 2)} | ${f(c.empty.p90, 2)} | ${f(c.empty.rowsPerSecond)} | ${f(c.empty.discoveryP50, 2)} |`,
      `| ${c.history.toLocaleString('en')} dispatched rows | ${f(c.withHistory.p50, 2)} | ${f(c.withHistory.p90, 2)} | ${f(c.withHistory.rowsPerSecond)} | ${f(c.withHistory.discoveryP50, 2)} |`,
      '',
      `Ratio with history / empty (p50): ${f(c.ratio, 2)}.`,
    );
  }
  const w = r.writePath;
  if (w) {
    out.push(
      '',
      '## D. write path, 8 concurrent clients, one transaction = outbox insert + commit',
      '',
      '| wake-up signal | commits/s (median) |',
      '|---|---:|',
      `| none | ${f(w.none)} |`,
      `| Redis PUBLISH after commit, coalesced (chosen) | ${f(w.publish)} (${f(w.publish / w.none, 2)}×) |`,
      `| pg NOTIFY inside the transaction (rejected) | ${f(w.notify)} (${f(w.notify / w.none, 2)}×) |`,
    );
    if (w.naivePlain)
      out.push(
        '',
        'The naive outbox (one INSERT per commit, no business row, no RLS):',
        '',
        '| wake-up signal | commits/s (median) |',
        '|---|---:|',
        `| none | ${f(w.naivePlain)} |`,
        `| statement-level NOTIFY trigger | ${f(w.naiveNotify)} (${f(w.naiveNotify / w.naivePlain, 2)}×) |`,
      );
  }
  return `${out.join('\n')}\n`;
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
