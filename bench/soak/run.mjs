#!/usr/bin/env node
/**
 * Chaos soak (issue 5, item 3). One bounded run (≈ 3–5 min on 2 cores):
 *   1. drops and recreates a dedicated database (name must contain "soak") with
 *      packages/db/dist/setup-cli.js, picks a unique BullMQ prefix, and starts platform-sim, the
 *      api, 2 dispatchers and 2 workers as child processes on ephemeral ports;
 *   2. turns platform faults on (10 % errors, dropped responses after the side effect, a few
 *      timeouts, latency) on the marketplace and AI routes;
 *   3. registers users/workspaces, creates stores (retrying through the faults) and product
 *      drafts, then runs concurrent clients sending publications (each draft to each store once),
 *      AI tasks, store syncs and draft creates, every logical request under one Idempotency-Key,
 *      duplicated 0–3 times (sometimes concurrently), all sent through the typed client's
 *      `idempotent()` (packages/client/dist: it retries network errors, 503 and 409 IN_PROGRESS
 *      under the same key), some cut off by the client, some keys deliberately misused;
 *   4. meanwhile SIGKILLs and restarts dispatchers and workers at random;
 *   5. stops the faults, waits (bounded) for the system to drain, checks the invariants from
 *      PostgreSQL (superuser: cross-workspace reads) and the platform counters, prints the table;
 *   6. writes the table into bench/soak/RESULTS.md and kills every child process (also on failure).
 * Exit code 0 only when every invariant holds.
 *
 * `--hosts` runs the same load over several hosts (hosts.mjs): network namespaces for PostgreSQL,
 * Redis, the simulator, 2 APIs, a dispatcher and a worker, each on its own address. Instead of
 * SIGKILLs, links are cut (packets dropped, both ways) and restored during the load: api↔PostgreSQL,
 * dispatcher↔Redis, worker↔platform, and more. After the last restore the system must drain within
 * --recovery-bound seconds (docs/scaling.md states the bound). Needs root; records into
 * bench/soak/RESULTS-hosts.md.
 *
 * Usage (from the repository root, after `pnpm install` and `pnpm run build`):
 *   pnpm --filter @listing/bench run soak [-- options]
 *   node bench/soak/run.mjs [--workspaces 4] [--stores 2] [--drafts 25] [--ai 60] [--syncs 10]
 *        [--creates 60] [--clients 12] [--dispatchers 2] [--workers 2] [--min-kills 6]
 *        [--error-rate 0.1] [--drain-timeout 150] [--no-record]
 *        [--hosts [--min-cuts 8] [--recovery-bound 60]]
 *
 * Environment: SOAK_DATABASE_URL (app role URL, default
 * postgres://app_user:app_user@127.0.0.1:5432/listing_soak), ADMIN_DATABASE_URL (superuser,
 * default postgres://postgres:postgres@127.0.0.1:5432/postgres), REDIS_URL.
 */
/* global fetch, AbortSignal, URL, setTimeout -- Node 20 globals (the eslint config declares only process and console for .mjs) */
import { spawn, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, isDeepStrictEqual } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import {
  addressOf,
  assertHostsPossible,
  createHosts,
  cut,
  destroyHosts,
  inHost,
  restore,
  startHostPostgres,
  startHostRedis,
} from './hosts.mjs';
import { LocalDirectoryObjectStorage } from '../../apps/api/dist/modules/object-storage/local-directory-object-storage.js';
// The typed client's build output (CommonJS: its named exports are read off the default import).
import listingClient from '../../packages/client/dist/index.js';

const { createListingClient, RetriesExhaustedError } = listingClient;

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const apiDir = path.join(root, 'apps/api');

// pnpm 12 hands a `--` separator through (`pnpm --filter @listing/bench run soak -- --no-record`).
const cliArgs = process.argv[2] === '--' ? process.argv.slice(3) : process.argv.slice(2);
const { values: opts } = parseArgs({
  args: cliArgs,
  options: {
    workspaces: { type: 'string', default: '4' },
    stores: { type: 'string', default: '2' },
    drafts: { type: 'string', default: '25' },
    ai: { type: 'string', default: '60' },
    syncs: { type: 'string', default: '10' },
    creates: { type: 'string', default: '60' },
    transfers: { type: 'string', default: '15' },
    clients: { type: 'string', default: '12' },
    dispatchers: { type: 'string', default: '2' },
    workers: { type: 'string', default: '2' },
    'min-kills': { type: 'string', default: '6' },
    'error-rate': { type: 'string', default: '0.1' },
    'drain-timeout': { type: 'string', default: '150' },
    'no-record': { type: 'boolean', default: false },
    hosts: { type: 'boolean', default: false },
    'min-cuts': { type: 'string', default: '8' },
    'recovery-bound': { type: 'string', default: '60' },
  },
});
const HOSTS = opts.hosts;
const N = (name) => Number(opts[name]);
const WORKSPACES = N('workspaces');
const STORES_PER_WS = N('stores');
const DRAFTS_PER_WS = N('drafts');
const AI_PER_WS = N('ai');
const SYNCS_PER_WS = N('syncs');
const CREATES_PER_WS = N('creates');
const TRANSFERS_PER_WS = N('transfers');
const CLIENTS = N('clients');
// One dispatcher host and one worker host; their processes are cut off, not killed.
const DISPATCHERS = HOSTS ? 1 : N('dispatchers');
const WORKERS = HOSTS ? 1 : N('workers');
const MIN_KILLS = HOSTS ? 0 : N('min-kills');
const MIN_CUTS = N('min-cuts');
const RECOVERY_BOUND_S = N('recovery-bound');
const ERROR_RATE = N('error-rate');
const DRAIN_TIMEOUT_MS = N('drain-timeout') * 1000;
const MIN_REQUESTS = 2000;

// --hosts: the servers the run starts in its db and redis hosts.
const APP_URL = HOSTS
  ? `postgres://app_user:app_user@${addressOf('db')}:5432/listing_soak`
  : (process.env.SOAK_DATABASE_URL ?? 'postgres://app_user:app_user@127.0.0.1:5432/listing_soak');
const ADMIN_URL = HOSTS
  ? `postgres://postgres:postgres@${addressOf('db')}:5432/postgres`
  : (process.env.ADMIN_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres');
const REDIS_URL = HOSTS
  ? `redis://${addressOf('redis')}:6379`
  : (process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const DB_NAME = new URL(APP_URL).pathname.slice(1);
if (!DB_NAME.includes('soak'))
  throw new Error(`refusing database "${DB_NAME}": its name must contain "soak"`);
const ADMIN_SOAK_URL = Object.assign(new URL(ADMIN_URL), { pathname: `/${DB_NAME}` }).toString();
const BULL_PREFIX = `soak-${Date.now().toString(36)}`;

const t0 = Date.now();
const elapsed = () => ((Date.now() - t0) / 1000).toFixed(1).padStart(6);
const log = (...args) => console.error(`[soak ${elapsed()}s]`, ...args);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rand = (min, max) => min + Math.random() * (max - min);
const randInt = (min, max) => Math.floor(rand(min, max + 1));
const pick = (list) => list[Math.floor(Math.random() * list.length)];
const chance = (p) => Math.random() < p;
function shuffle(list) {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [list[i], list[j]] = [list[j], list[i]];
  }
  return list;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// child processes

const logDir = path.join(here, 'logs');
const children = new Set();

/**
 * Spawns `node <script>` from apps/api (inside `host` with --hosts); output goes to
 * bench/soak/logs/<name>.log (+ a tail).
 */
function spawnNode(name, script, env, host) {
  return spawnProgram(name, [process.execPath, script], env, host);
}

/** Spawns a program in the root namespace, or inside `host`'s (--hosts). */
function spawnProgram(name, argv, env = {}, host = undefined) {
  const [command, args] = host ? inHost(host, argv) : [argv[0], argv.slice(1)];
  const child = spawn(command, args, {
    cwd: apiDir,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const file = createWriteStream(path.join(logDir, `${name}.log`), { flags: 'a' });
  let tail = '';
  const onData = (d) => {
    // 'exit' can come before the last output of the pipes (PostgreSQL's shutdown lines).
    if (!file.writableEnded) file.write(d);
    tail = (tail + d.toString()).slice(-65536);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  child.soakName = name;
  child.tail = () => tail;
  child.exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      file.end();
      resolve({ code, signal });
    }),
  );
  children.add(child);
  return child;
}

const isAlive = (child) => child && child.exitCode === null && child.signalCode === null;

/** Occurrences of `needle` in our own processes' logs (not the simulator's: it is the source). */
function countInLogs(needle) {
  let n = 0;
  for (const f of readdirSync(logDir)) {
    if (f.startsWith('platform-sim')) continue;
    n += readFileSync(path.join(logDir, f), 'utf8').split(needle).length - 1;
  }
  return n;
}

async function waitForOutput(child, pattern, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(child.tail())) {
    if (!isAlive(child))
      throw new Error(`${child.soakName} exited before printing ${pattern}:\n${child.tail()}`);
    if (Date.now() > deadline)
      throw new Error(`${child.soakName} did not print ${pattern}:\n${child.tail()}`);
    await sleep(25);
  }
}

function killAllChildren() {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}
process.on('exit', killAllChildren);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    log(`${signal}: killing the children`);
    killAllChildren();
    process.exit(130);
  });
}

// ---------------------------------------------------------------------------------------------
// the api, through the typed client (packages/client): every command request is counted

const stats = {
  commandRequests: 0,
  duplicates: 0, // extra sends of a logical request (random duplicates + retries after a transient answer)
  concurrentDuplicates: 0,
  clientAborts: 0,
  transient: { network: 0, serviceUnavailable: 0, inProgress: 0 },
  replayedHeader: 0,
  misuse: { sent: 0, refused: 0 },
  unexpected: [],
};

/**
 * Every command goes through the client's `idempotent()`: it keeps the command's key on every
 * attempt and retries network errors, 503 and 409 IDEMPOTENCY_REQUEST_IN_PROGRESS itself
 * (Retry-After, else full-jitter backoff), within these bounds (a send is cut at 20 s).
 */
const SOAK_RETRY = {
  maxAttempts: 16,
  maxElapsedMs: 120_000,
  attemptTimeoutMs: 20_000,
  baseDelayMs: 30,
  maxDelayMs: 1000,
};

/** Counts every command request (POST) the clients put on the wire, retries included. */
const countingFetch = (request) => {
  if (request.method === 'POST') stats.commandRequests++;
  return fetch(request);
};

/** One client per workspace, with its user's token. */
const workspaceClient = (baseUrl, token) =>
  createListingClient({ baseUrl, token, fetch: countingFetch, retry: SOAK_RETRY });

/**
 * A logical command: one key, one body. `kind` is the resource family for the invariants;
 * `route` is its path under /v1/workspaces/{workspaceId}; `definitive` lists the non-2xx answers
 * that legitimately end it (e.g. 409 SYNC_ALREADY_ACTIVE).
 */
function logical(kind, ws, route, body, definitive = [], { method = 'post', headers } = {}) {
  return {
    kind,
    ws,
    route,
    body,
    method,
    headers,
    key: randomUUID(),
    definitive,
    attempts: [],
    ok: null,
    final: null,
  };
}

/** Records one attempt of the helper (it calls this after each). */
function attemptRecorder(attempts) {
  return ({ status, code, retryInMs }) => {
    attempts?.push(status ?? 0);
    if (status === undefined) stats.transient.network++;
    else if (status === 503) stats.transient.serviceUnavailable++;
    else if (code === 'IDEMPOTENCY_REQUEST_IN_PROGRESS') stats.transient.inProgress++;
    if (retryInMs !== undefined) stats.duplicates++; // the helper sends it again
  };
}

/**
 * One call of `idempotent()` under the command's key: the helper's result, or `{ status: 0 }`
 * when there is no definitive answer (cut off by us, or the helper gave up). `cutOff` aborts the
 * call after 2–40 ms through its signal, which the helper never retries (the deliberate "client
 * hung up"); `route` and `body` override the command's (deliberate key misuse).
 */
async function send(
  cmd,
  { cutOff = false, route = cmd.route, body = cmd.body, attempts = cmd.attempts } = {},
) {
  try {
    return await cmd.ws.client.idempotent(
      route === cmd.route ? cmd.method : 'post',
      `/v1/workspaces/{workspaceId}${route}`,
      {
        params: {
          path: { workspaceId: cmd.ws.id },
          ...(cmd.headers && route === cmd.route ? { header: cmd.headers } : {}),
        },
        body,
        ...(cutOff ? { signal: AbortSignal.timeout(randInt(2, 40)) } : {}),
      },
      { key: cmd.key, onAttempt: attemptRecorder(attempts) },
    );
  } catch (error) {
    if (cutOff && error?.name === 'TimeoutError') {
      stats.clientAborts++;
      attempts?.push(0);
      return { status: 0, error };
    }
    if (error instanceof RetriesExhaustedError) return { status: 0, error };
    throw error;
  }
}

/** One send of a logical command and what its answer means for the invariants. */
async function attempt(cmd, options = {}) {
  const r = await send(cmd, options);
  if (r.status >= 200 && r.status < 300) {
    if (r.replayed) stats.replayedHeader++;
    if (cmd.ok === null) cmd.ok = { status: r.status, body: r.data };
    else if (cmd.ok.status !== r.status || !isDeepStrictEqual(cmd.ok.body, r.data)) {
      cmd.replayMismatch = { first: cmd.ok, later: { status: r.status, body: r.data } };
    }
  } else if (r.status !== 0) {
    const code = r.error?.code ?? String(r.status);
    if (!cmd.definitive.includes(code)) {
      stats.unexpected.push({ kind: cmd.kind, status: r.status, code, detail: r.error?.detail ?? r.error });
    }
    cmd.lastRefusal = code;
  }
  return r;
}

/**
 * One logical request with chaos: sometimes the first send is cut off by the client; 0–3
 * duplicates with the same key and body, sometimes in parallel with the original, otherwise
 * after its answer; sent once more when none of them got a definitive answer.
 */
async function runCommand(cmd) {
  const dups = randInt(0, 3);
  const concurrent = dups > 0 && chance(0.35);
  const cutOff = chance(0.08);
  let answers;
  if (concurrent) {
    stats.duplicates += dups;
    stats.concurrentDuplicates += dups;
    answers = await Promise.all([
      attempt(cmd, { cutOff }),
      ...Array.from({ length: dups }, async () => {
        await sleep(rand(0, 15));
        return attempt(cmd);
      }),
    ]);
  } else {
    answers = [await attempt(cmd, { cutOff })];
    for (let i = 0; i < dups; i++) {
      await sleep(rand(0, 100));
      stats.duplicates++;
      answers.push(await attempt(cmd));
    }
  }
  let last = answers.find((r) => r.status !== 0) ?? answers[answers.length - 1];
  if (last.status === 0) {
    stats.duplicates++;
    last = await attempt(cmd);
  }
  cmd.final = last.status === 0 ? 'unknown' : last.status;
  return last;
}

/** Same key, other body (→ 409 IDEMPOTENCY_KEY_REUSED) or other route (→ 409 IDEMPOTENCY_SCOPE_CONFLICT). */
async function misuseKey(cmd, otherRoute, otherBody) {
  stats.misuse.sent++;
  const r = await send(cmd, { route: otherRoute, body: otherBody, attempts: null });
  if (r.status === 409 && ['IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_SCOPE_CONFLICT'].includes(r.error?.code)) {
    stats.misuse.refused++;
  } else {
    stats.unexpected.push({ kind: `misuse of a ${cmd.kind} key`, status: r.status, code: r.error?.code });
  }
}

// ---------------------------------------------------------------------------------------------
// main

async function main() {
  const startedAt = new Date();
  for (const f of [
    'apps/api/dist/main.js',
    'apps/platform-sim/dist/main.js',
    'packages/db/dist/setup-cli.js',
  ]) {
    if (!existsSync(path.join(root, f)))
      throw new Error(`build output missing (${f}): run \`pnpm run build\``);
  }
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  const objectDir = mkdtempSync(path.join(os.tmpdir(), 'listing-soak-objects-'));
  let hostPostgres = null;
  if (HOSTS) {
    assertHostsPossible();
    createHosts();
    const inHostSpawn = (name, host, argv) => spawnProgram(name, argv, {}, host);
    hostPostgres = await startHostPostgres(inHostSpawn);
    await startHostRedis(inHostSpawn);
    log(`hosts: PostgreSQL ${addressOf('db')}, Redis ${addressOf('redis')}, each in its own namespace`);
  }

  log(`recreating database ${DB_NAME}; BullMQ prefix ${BULL_PREFIX}`);
  execFileSync('psql', [
    ADMIN_URL,
    '-v',
    'ON_ERROR_STOP=1',
    '-qc',
    `drop database if exists "${DB_NAME}" with (force)`,
  ]);
  execFileSync(process.execPath, [path.join(root, 'packages/db/dist/setup-cli.js')], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: APP_URL, ADMIN_DATABASE_URL: ADMIN_URL },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const db = new pg.Pool({ connectionString: ADMIN_SOAK_URL, max: 2 });
  db.on('error', () => undefined); // an idle connection of a server the run stops
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });

  const kills = { dispatcher: 0, worker: 0, log: [] };
  /** --hosts: the link cuts made, the one in force, when the last one was restored. */
  const cuts = { log: [], active: null, lastRestoreAt: 0 };
  // --hosts: the load is paced (a pause between a client's commands) so that it lasts as long as
  // the cuts: each cut then lands on requests and jobs in flight, not on an idle system.
  const pace = () => (HOSTS ? sleep(rand(600, 1400)) : undefined);
  let loadRunning = true;
  let chaosStop = false;
  let shuttingDown = false;
  /** A sleep the end of the chaos phase cuts short. */
  const chaosSleep = async (ms) => {
    const until = Date.now() + ms;
    while (!chaosStop && Date.now() < until) await sleep(Math.min(100, until - Date.now()));
  };
  let chaosLoop = Promise.resolve();
  try {
    // ------------------------------------------------------------------- processes
    const simPort = await freePort();
    const simHost = HOSTS ? addressOf('sim') : '127.0.0.1';
    const sim = spawnNode(
      'platform-sim',
      path.join(root, 'apps/platform-sim/dist/main.js'),
      { PORT: String(simPort), HOST: simHost, LOG_LEVEL: 'warn' },
      HOSTS ? 'sim' : undefined,
    );
    const simUrl = `http://${simHost}:${simPort}`;
    await waitForHealth(`${simUrl}/health`, sim);
    const simAdmin = (method, p, body) =>
      fetch(simUrl + p, {
        method,
        headers: body ? { 'content-type': 'application/json' } : {},
        body: body ? JSON.stringify(body) : undefined,
      }).then(async (r) => {
        if (!r.ok) throw new Error(`platform-sim ${method} ${p} → ${r.status} ${await r.text()}`);
        return r.json();
      });

    const common = {
      NODE_ENV: 'development',
      DATABASE_URL: APP_URL,
      REDIS_URL,
      BULLMQ_PREFIX: BULL_PREFIX,
      PLATFORM_BASE_URL: simUrl,
      PLATFORM_TIMEOUT_MS: '2000',
      OBJECT_STORAGE_DIR: objectDir,
      // Material transfers fetch their sources from the simulator, through the same faults.
      MATERIAL_SOURCE_ALLOWLIST: `${simHost}:${simPort}`,
      MATERIAL_FETCH_TIMEOUT_MS: '2000',
      LOG_LEVEL: 'info',
    };
    const apiPort = await freePort();
    const apiHosts = HOSTS ? ['api0', 'api1'] : [undefined];
    const apis = apiHosts.map((host) =>
      spawnNode(
        HOSTS ? host : 'api',
        'dist/main.js',
        {
          ...common,
          HOST: host ? addressOf(host) : '127.0.0.1',
          PORT: String(apiPort),
          DATABASE_POOL_SIZE: '12',
          AUTH_SCRYPT_LOG_N: '10',
          ACCESS_TOKEN_TTL_SECONDS: '3600',
          RATE_LIMIT_AUTH_PER_MINUTE: '1000',
          LOG_LEVEL: 'warn',
        },
        host,
      ),
    );
    const roleEnv = {
      ...common,
      DATABASE_POOL_SIZE: '5',
      OUTBOX_POLL_INTERVAL_MS: '200',
      OUTBOX_LEASE_MS: '10000',
      OUTBOX_HANDLER_BACKOFF_MS: '250',
      OUTBOX_BACKOFF_BASE_MS: '250',
      OUTBOX_BACKOFF_MAX_MS: '5000',
      OUTBOX_WORKER_CONCURRENCY: '8',
    };
    const generation = { dispatcher: 0, worker: 0 };
    const startRole = (role, slot) => {
      generation[role]++;
      const script = role === 'worker' ? 'dist/worker.js' : 'dist/dispatcher.js';
      return spawnNode(
        `${role}-${slot}`,
        script,
        {
          ...roleEnv,
          ...(role === 'dispatcher'
            ? { OUTBOX_DISPATCHER_ID: `soak-dispatcher-${slot}-${generation.dispatcher}` }
            : {}),
        },
        HOSTS ? role : undefined,
      );
    };
    const roles = {
      dispatcher: Array.from({ length: DISPATCHERS }, (_, i) => startRole('dispatcher', i)),
      worker: Array.from({ length: WORKERS }, (_, i) => startRole('worker', i)),
    };
    const apiUrls = apiHosts.map((host) => `http://${host ? addressOf(host) : '127.0.0.1'}:${apiPort}`);
    await Promise.all(apis.map((api, i) => waitForHealth(`${apiUrls[i]}/health/live`, api)));
    await Promise.all(roles.worker.map((w) => waitForOutput(w, /worker ready/)));
    log(
      `platform-sim ${simUrl}, api ${apiUrls.join(' ')}, ${DISPATCHERS} dispatcher(s), ${WORKERS} worker(s)`,
    );

    // ------------------------------------------------------------------- faults on
    const faultRule = {
      errorRate: ERROR_RATE,
      dropResponseRate: 0.05,
      timeoutRate: 0.01,
      timeoutMs: 3000,
      latencyMs: 15,
      routes: ['/platform/v1/', '/ai/v1/'],
    };
    await simAdmin('POST', '/admin/faults', faultRule);
    log(`platform faults on: ${JSON.stringify(faultRule)}`);

    // ------------------------------------------------------------------- chaos: kill/restart
    const chaos = async () => {
      while (!chaosStop) {
        await chaosSleep(rand(3000, 8000));
        if (chaosStop) break;
        // Random, but neither role gets more than one kill ahead of the other.
        const diff = kills.dispatcher - kills.worker;
        const role = diff > 0 ? 'worker' : diff < 0 ? 'dispatcher' : chance(0.5) ? 'dispatcher' : 'worker';
        const slot = randInt(0, roles[role].length - 1);
        const victim = roles[role][slot];
        if (isAlive(victim)) {
          victim.kill('SIGKILL');
          await victim.exited;
          kills[role]++;
          kills.log.push({ at: elapsed().trim(), role, slot, pid: victim.pid });
          log(`SIGKILL ${role}-${slot} (pid ${victim.pid}); kills so far ${kills.dispatcher + kills.worker}`);
        }
        await chaosSleep(rand(300, 2000));
        if (shuttingDown) return;
        roles[role][slot] = startRole(role, slot);
      }
    };
    // --hosts: links cut and restored instead; the three the issue names first, then any.
    const LINKS = [
      ['api0', 'db'],
      ['dispatcher', 'redis'],
      ['worker', 'sim'],
      ['api1', 'db'],
      ['worker', 'db'],
      ['dispatcher', 'db'],
      ['worker', 'redis'],
      ['api1', 'redis'],
    ];
    const partitions = async () => {
      while (!chaosStop) {
        await chaosSleep(rand(1000, 3000));
        if (chaosStop) break;
        const [a, b] = cuts.log.length < 3 ? LINKS[cuts.log.length] : pick(LINKS);
        const cutAt = Date.now();
        cut(a, b);
        cuts.active = [a, b];
        log(`cut ${a}↔${b}`);
        await chaosSleep(randInt(3000, 8000));
        restore(a, b);
        cuts.active = null;
        cuts.lastRestoreAt = Date.now();
        cuts.log.push({
          at: elapsed().trim(),
          link: `${a}↔${b}`,
          seconds: (Date.now() - cutAt) / 1000,
          underLoad: loadRunning,
        });
        log(
          `restored ${a}↔${b} after ${((Date.now() - cutAt) / 1000).toFixed(1)} s; cuts so far ${cuts.log.length}`,
        );
      }
    };
    chaosLoop = HOSTS ? partitions() : chaos();

    // ------------------------------------------------------------------- setup: users, stores
    const commands = [];
    const workspaces = [];
    for (let i = 0; i < WORKSPACES; i++) {
      const email = `soak-${i}-${randomUUID()}@example.test`;
      // --hosts: the workspaces alternate between the two APIs.
      const apiUrl = apiUrls[i % apiUrls.length];
      const { data, error, response } = await createListingClient({ baseUrl: apiUrl }).POST(
        '/v1/auth/register',
        {
          body: { email, password: `pw-${randomUUID()}`, workspaceName: `soak ${i}` },
        },
      );
      if (!data) throw new Error(`register → ${response.status} ${JSON.stringify(error)}`);
      workspaces.push({
        index: i,
        client: workspaceClient(apiUrl, data.accessToken),
        id: data.workspace.id,
        stores: [],
        drafts: [],
      });
    }

    const storeCmds = workspaces.flatMap((ws) =>
      Array.from({ length: STORES_PER_WS }, (_, s) => {
        const n = Math.random().toString(36).slice(2, 10);
        return logical('stores', ws, '/stores', {
          platform: 'sim',
          storeExternalId: `soak-${ws.index}-${s}-${n}`,
          apiKey: `valid-key-soak-${n}`,
          apiSecret: `secret-soak-${n}-${n}`,
        });
      }),
    );
    commands.push(...storeCmds);
    await pool(storeCmds, CLIENTS, (cmd) => runCommand(cmd));
    for (const cmd of storeCmds) {
      if (!cmd.ok) throw new Error(`store create ended ${cmd.final}: ${JSON.stringify(cmd.attempts)}`);
      cmd.ws.stores.push({
        id: cmd.ok.body.store.id,
        externalId: cmd.body.storeExternalId,
        apiKey: cmd.body.apiKey,
      });
    }
    await waitUntil('every store to be active', 90_000, async () => {
      for (const cmd of storeCmds) {
        const { data } = await cmd.ws.client.GET('/v1/workspaces/{workspaceId}/stores/{storeId}', {
          params: { path: { workspaceId: cmd.ws.id, storeId: cmd.ok.body.store.id } },
        });
        if (data?.status !== 'active') return false;
      }
      return true;
    });
    for (const cmd of storeCmds)
      await simAdmin('POST', `/admin/stores/${cmd.body.storeExternalId}/products/seed`, { count: 120 });
    log(`${storeCmds.length} stores active (120 products seeded in each)`);

    // ------------------------------------------------------------------- setup: drafts
    const draftBody = (ws, i) => ({
      title: `Soak draft ${ws.index}-${i}-${Math.random().toString(36).slice(2, 8)}`,
      description: 'A product of the chaos soak',
      price: { amount: `${randInt(1, 300)}.${randInt(10, 99)}`, currency: 'EUR' },
    });
    const setupDrafts = workspaces.flatMap((ws) =>
      Array.from({ length: DRAFTS_PER_WS }, (_, i) =>
        logical('product_drafts', ws, '/product-drafts', draftBody(ws, i)),
      ),
    );
    commands.push(...setupDrafts);
    await pool(setupDrafts, CLIENTS, (cmd) => runCommand(cmd));
    for (const cmd of setupDrafts) {
      if (!cmd.ok) throw new Error(`draft create ended ${cmd.final}: ${JSON.stringify(cmd.attempts)}`);
      cmd.ws.drafts.push(cmd.ok.body.id);
    }
    log(`${setupDrafts.length} drafts created; ${stats.commandRequests} command requests so far`);

    // ------------------------------------------------------------------- the load
    const load = [];
    for (const ws of workspaces) {
      for (const draftId of ws.drafts) {
        for (const store of ws.stores) {
          load.push(
            logical('publications', ws, '/publications', { draftId, revision: 1, storeId: store.id }, [
              'ALREADY_PUBLISHED',
            ]),
          );
        }
      }
      for (let i = 0; i < AI_PER_WS; i++) {
        const kind = pick(['text', 'text', 'category', 'image']);
        const body = { kind, draftId: pick(ws.drafts), revision: 1 };
        if (kind === 'text')
          Object.assign(body, { target: pick(['title', 'description']), prompt: `Soak prompt ${i}` });
        load.push(logical('ai_tasks', ws, '/ai-tasks', body));
      }
      for (let i = 0; i < SYNCS_PER_WS; i++) {
        load.push(
          logical('store_syncs', ws, '/store-syncs', { storeId: pick(ws.stores).id }, [
            'SYNC_ALREADY_ACTIVE',
          ]),
        );
      }
      for (let i = 0; i < CREATES_PER_WS; i++) {
        load.push(logical('product_drafts', ws, '/product-drafts', draftBody(ws, `c${i}`)));
      }
      // Distinct sources (one transfer per workspace and source); the query string stands for a
      // presigned URL's signature and must never leave the transfer row.
      for (let i = 0; i < TRANSFERS_PER_WS; i++) {
        const name = `soak-${ws.index}-${i}-${randInt(16, 96)}x${randInt(16, 96)}.${pick(['png', 'jpg'])}`;
        const sourceUrl = `${simUrl}/platform/v1/media/${name}?X-Amz-Signature=soak${randomUUID().slice(0, 8)}`;
        load.push(logical('material_transfers', ws, '/material-transfers', { sourceUrl }));
      }
    }
    // A second key for an already targeted (draft, store): must be refused, never a second product.
    const conflicting = shuffle(load.filter((c) => c.kind === 'publications'))
      .slice(0, 10)
      .map((c) => logical('publications', c.ws, c.route, c.body, ['ALREADY_PUBLISHED']));
    load.push(...conflicting);
    shuffle(load);
    commands.push(...load);
    log(`load: ${load.length} logical requests over ${CLIENTS} clients`);
    let done = 0;
    await pool(load, CLIENTS, async (cmd) => {
      await pace();
      await runCommand(cmd);
      // Deliberate misuse of a settled key (never executes, never creates anything).
      if (cmd.ok && chance(0.04)) {
        const other =
          cmd.kind === 'product_drafts'
            ? { ...cmd.body, title: `${cmd.body.title} (other body)` }
            : cmd.kind === 'ai_tasks'
              ? { ...cmd.body, prompt: 'another prompt' }
              : null;
        if (other) await misuseKey(cmd, cmd.route, other);
        else await misuseKey(cmd, '/product-drafts', draftBody(cmd.ws, 'scope'));
      }
      if (++done % 200 === 0)
        log(`${done}/${load.length} logical, ${stats.commandRequests} command requests sent`);
    });

    // Settle: a key whose answers included a cut-off, a network error or a 5xx gets one more
    // call, so every key ends with a known outcome (a cut-off request may have committed).
    const unsure = commands.filter((c) => !c.ok && c.attempts.some((s) => s === 0 || s >= 500));
    for (const cmd of unsure) {
      stats.duplicates++;
      const r = await attempt(cmd);
      if (r.status !== 0) cmd.final = r.status;
    }
    log(`load done: ${stats.commandRequests} command requests; settled ${unsure.length} uncertain keys`);

    // ------------------------------------------------------------------- product updates
    // Still under faults and kills: each published draft gets two new revisions (PATCH), then
    // every publication of it is sent both updates at once, in random order, each through the
    // same chaos as the load. A revision not newer than one live or requested is refused (409);
    // the worker must never let the older overwrite the newer at the marketplace. AI tasks write
    // draft revisions too: every accepted command ends first, so If-Match names the current one.
    await waitUntil('every operation to end', 180_000, async () => {
      const { rows } = await db.query(
        `select count(*)::int as n from operations where status in ('pending', 'running')`,
      );
      return rows[0].n === 0;
    });
    const livePubs = (
      await db.query(`select id, workspace_id, draft_id from publications where status = 'published'`)
    ).rows;
    const wsById = new Map(workspaces.map((ws) => [ws.id, ws]));
    const draftIds = [...new Set(livePubs.map((p) => p.draft_id))];
    const current = new Map(
      (await db.query(`select id, revision from records where id = any($1::uuid[])`, [draftIds])).rows.map(
        (r) => [r.id, r.revision],
      ),
    );
    const newRevisions = new Map(draftIds.map((id) => [id, []]));
    const patches = [];
    for (const round of [1, 2]) {
      const batch = draftIds.map((draftId) => {
        const p = livePubs.find((x) => x.draft_id === draftId);
        const cmd = logical(
          'draft_patches',
          wsById.get(p.workspace_id),
          `/product-drafts/${draftId}`,
          { title: `Soak update ${round} ${draftId.slice(0, 8)}`, attributes: { round: String(round) } },
          [],
          { method: 'patch', headers: { 'If-Match': `"${current.get(draftId)}"` } },
        );
        cmd.draftId = draftId;
        return cmd;
      });
      await pool(batch, CLIENTS, (cmd) => runCommand(cmd));
      for (const cmd of batch) {
        if (!cmd.ok) continue;
        current.set(cmd.draftId, cmd.ok.body.revision);
        newRevisions.get(cmd.draftId).push(cmd.ok.body.revision);
      }
      patches.push(...batch);
    }
    commands.push(...patches);
    const updates = shuffle(
      livePubs.flatMap((p) =>
        newRevisions
          .get(p.draft_id)
          .map((revision) =>
            logical(
              'publication_updates',
              wsById.get(p.workspace_id),
              `/publications/${p.id}/updates`,
              { revision },
              ['REVISION_NOT_NEWER'],
            ),
          ),
      ),
    );
    commands.push(...updates);
    await pool(updates, CLIENTS, async (cmd) => {
      await pace();
      await runCommand(cmd);
    });
    loadRunning = false;
    log(
      `updates: ${patches.length} draft patches, ${updates.length} update requests for ${livePubs.length} products`,
    );

    while (kills.dispatcher + kills.worker < MIN_KILLS) {
      log(`waiting for kill #${MIN_KILLS} (${kills.dispatcher + kills.worker} so far)`);
      await sleep(2000);
    }
    while (HOSTS && cuts.log.length < MIN_CUTS) {
      log(`waiting for cut #${MIN_CUTS} (${cuts.log.length} so far)`);
      await sleep(2000);
    }
    chaosStop = true;
    await chaosLoop;
    // --hosts: nobody was killed, so every process must have lived through every cut.
    const crashed = HOSTS ? [...apis, ...roles.dispatcher, ...roles.worker].filter((c) => !isAlive(c)) : [];
    for (const role of ['dispatcher', 'worker']) {
      for (let slot = 0; slot < roles[role].length; slot++) {
        if (!isAlive(roles[role][slot])) roles[role][slot] = startRole(role, slot);
      }
    }

    // ------------------------------------------------------------------- drain
    await simAdmin('DELETE', '/admin/faults');
    log('faults off; draining');
    const drainStart = Date.now();
    let drained = false;
    while (Date.now() - drainStart < DRAIN_TIMEOUT_MS) {
      const { rows } = await db.query(`
        select (select count(*) from operations where status in ('pending', 'running'))::int as ops,
               (select count(*) from outbox_events where status in ('pending', 'dispatching'))::int as events`);
      if (rows[0].ops === 0 && rows[0].events === 0) {
        drained = true;
        break;
      }
      if ((Date.now() - drainStart) % 10_000 < 1000)
        log(`draining: ${rows[0].ops} operations open, ${rows[0].events} events undispatched`);
      await sleep(1000);
    }
    const drainSeconds = ((Date.now() - drainStart) / 1000).toFixed(1);
    const recoverySeconds = ((Date.now() - cuts.lastRestoreAt) / 1000).toFixed(1);
    log(drained ? `drained in ${drainSeconds} s` : `NOT drained after ${drainSeconds} s`);

    // ------------------------------------------------------------------- invariants
    const counters = await simAdmin('GET', '/admin/counters');
    const q = async (sql) => (await db.query(sql)).rows;
    const one = async (sql) => Number(Object.values((await q(sql))[0])[0]);
    const keysOk = (kind) => new Set(commands.filter((c) => c.kind === kind && c.ok).map((c) => c.key)).size;
    const checks = [];
    const check = (name, expected, actual, pass) =>
      checks.push({
        name,
        expected: String(expected),
        actual: String(actual),
        pass: pass ?? String(expected) === String(actual),
      });

    const unknown = commands.filter((c) => c.final === 'unknown').length;
    check(
      'command requests sent',
      `≥ ${MIN_REQUESTS}`,
      stats.commandRequests,
      stats.commandRequests >= MIN_REQUESTS,
    );
    check(
      'duplicates + retries (same key, same body)',
      '> 0',
      `${stats.duplicates} (${stats.concurrentDuplicates} concurrent, ${stats.clientAborts} cut off by the client)`,
      stats.duplicates > 0,
    );
    if (HOSTS) {
      const named = ['api0↔db', 'dispatcher↔redis', 'worker↔sim'];
      check(
        'link cuts (packets dropped both ways), restored',
        `≥ ${MIN_CUTS}, incl. ${named.join(', ')}`,
        `${cuts.log.length}: ${[...new Set(cuts.log.map((c) => c.link))].join(', ')}`,
        cuts.log.length >= MIN_CUTS && named.every((l) => cuts.log.some((c) => c.link === l)),
      );
      const underLoad = cuts.log.filter((c) => c.underLoad);
      check(
        'link cuts that began and ended while the load ran',
        `≥ ${MIN_CUTS}, incl. ${named.join(', ')}`,
        underLoad.length,
        underLoad.length >= MIN_CUTS && named.every((l) => underLoad.some((c) => c.link === l)),
      );
      check(
        'processes that exited during the cuts',
        0,
        crashed.length ? crashed.map((c) => `${c.soakName}: ${c.tail().slice(-300)}`).join('; ') : 0,
        crashed.length === 0,
      );
      check(
        'drained after the last link came back (s)',
        `≤ ${RECOVERY_BOUND_S}`,
        drained ? recoverySeconds : `not drained (${recoverySeconds})`,
        drained && Number(recoverySeconds) <= RECOVERY_BOUND_S,
      );
    } else {
      check(
        'process kills (SIGKILL)',
        `≥ ${MIN_KILLS}`,
        `${kills.dispatcher + kills.worker} (dispatcher ${kills.dispatcher}, worker ${kills.worker})`,
        kills.dispatcher + kills.worker >= MIN_KILLS,
      );
    }
    // Every provider request under the rule is delayed (latencyMs > 0), so `delayed` counts them all.
    const faulted = counters.faults.delayed;
    check(
      'platform faults injected (share of provider requests)',
      `errors ${ERROR_RATE * 100} %`,
      `errors ${counters.faults.errors}/${faulted} = ${((100 * counters.faults.errors) / Math.max(1, faulted)).toFixed(1)} %, drops ${counters.faults.drops}, timeouts ${counters.faults.timeouts}`,
      counters.faults.errors > 0,
    );
    check('logical requests without a definitive answer', 0, unknown);
    check('unexpected answers (other than 2xx, transient, or a listed refusal)', 0, stats.unexpected.length);
    check(
      'replays identical to the first 2xx answer (mismatches)',
      0,
      commands.filter((c) => c.replayMismatch).length,
    );
    check(
      'misused keys refused with 409 (other body / other route)',
      stats.misuse.sent,
      stats.misuse.refused,
    );

    check('stores = distinct keys answered 2xx', keysOk('stores'), await one(`select count(*) from stores`));
    check(
      'stores active',
      keysOk('stores'),
      await one(`select count(*) from stores where status = 'active'`),
    );
    check(
      'product drafts = distinct keys answered 2xx',
      keysOk('product_drafts'),
      await one(`select count(*) from records where module_code = 'product_draft'`),
    );
    const pubRows = await q(`select id, status, platform_product_id from publications`);
    check('publications = distinct keys answered 2xx', keysOk('publications'), pubRows.length);
    check(
      'publications per (draft, store) ≤ 1',
      0,
      await one(
        `select count(*) from (select 1 from publications group by draft_id, store_id having count(*) > 1) d`,
      ),
    );
    check(
      'ai tasks = distinct keys answered 2xx',
      keysOk('ai_tasks'),
      await one(`select count(*) from ai_tasks`),
    );
    check(
      'store syncs = distinct keys answered 2xx',
      keysOk('store_syncs'),
      await one(`select count(*) from store_syncs`),
    );
    check(
      'material transfers = distinct keys answered 2xx',
      keysOk('material_transfers'),
      await one(`select count(*) from material_transfers`),
    );
    const okKeys = commands.filter((c) => c.ok).length;
    check(
      'idempotency records (SUCCEEDED) = keys answered 2xx',
      okKeys,
      await one(`select count(*) from idempotency_requests where status = 'SUCCEEDED'`),
    );

    const published = pubRows.filter((p) => p.status === 'published');
    check('publications published = publications', pubRows.length, published.length);
    check('platform products created = publications published', published.length, counters.productsCreated);
    const productKeys = Object.keys(counters.productsByKey);
    const pubMismatch = published.filter(
      (p) => counters.productsByKey[`publication-${p.id}`] !== p.platform_product_id,
    );
    const strayProductKeys = productKeys.filter((k) => !published.some((p) => `publication-${p.id}` === k));
    check(
      'products per key = 1 (productsByKey = products, ids match, no stray key)',
      `${counters.productsCreated} keys, 0 mismatches`,
      `${productKeys.length} keys, ${pubMismatch.length + strayProductKeys.length} mismatches`,
    );
    const aiSucceeded = await q(`select id from ai_tasks where status = 'succeeded'`);
    const aiCount = await one(`select count(*) from ai_tasks`);
    check('ai tasks succeeded = ai tasks', aiCount, aiSucceeded.length);
    check(
      'billed AI calls (billing entries) = ai tasks succeeded',
      aiSucceeded.length,
      counters.billingEntries,
    );
    const billing = Object.entries(counters.billingByKey);
    const overBilled = billing.filter(([, n]) => n !== 1);
    const strayBilling = billing.filter(([k]) => !aiSucceeded.some((t) => `ai-task-${t.id}` === k));
    check(
      'billing entries per key = 1 (no stray key)',
      `${aiSucceeded.length} keys, 0 bad`,
      `${billing.length} keys, ${overBilled.length + strayBilling.length} bad`,
    );
    // Each transfer copied once, under its own key, with the bytes its row describes (a killed or
    // redelivered copy may fetch again, but never writes a second or a different object).
    const transfers = await q(
      `select workspace_id, id, status, checksum_sha256 from material_transfers order by id`,
    );
    // Read through the storage itself (its file layout is its own business): the object under the
    // transfer's key must be there, intact, with the checksum its row records.
    const storage = new LocalDirectoryObjectStorage(objectDir);
    const transferBad = [];
    for (const tr of transfers) {
      const stored =
        tr.status === 'succeeded'
          ? await storage.get(`workspaces/${tr.workspace_id}/material-transfers/${tr.id}/original`)
          : null;
      if (!stored || stored.object.sha256 !== tr.checksum_sha256) transferBad.push(tr);
    }
    // Every copy that was written stays: one committed object (meta) and one data file per transfer.
    const under = (dir, pattern) =>
      existsSync(dir)
        ? readdirSync(dir, { recursive: true }).filter((f) => pattern.test(String(f))).length
        : 0;
    const transferObjects = under(
      path.join(objectDir, 'meta', 'workspaces'),
      /material-transfers[/\\][^/\\]+[/\\]original\.json$/,
    );
    const transferDataFiles = under(
      path.join(objectDir, 'data', 'workspaces'),
      /material-transfers[/\\][^/\\]+[/\\]original(~[0-9a-f]+)?$/,
    );
    check(
      'transfers succeeded, each one object whose sha256 = its row (objects stored = transfers)',
      `${transfers.length} ok, ${transfers.length} objects, ${transfers.length} data files`,
      `${transfers.length - transferBad.length} ok, ${transferObjects} objects, ${transferDataFiles} data files`,
    );
    check(
      'presigned signatures outside the transfer rows (events, idempotency records, logs)',
      0,
      (await one(
        `select (select count(*) from outbox_events where payload::text like '%Signature%')
              + (select count(*) from idempotency_requests where response_envelope::text like '%Signature%')`,
      )) + countInLogs('X-Amz-Signature=soak'),
    );
    // Product updates: one row per key answered 2xx; each product shows its live revision, which
    // is the newest revision applied to it (never an older one after a newer).
    check(
      'publication updates = distinct keys answered 2xx',
      keysOk('publication_updates'),
      await one(`select count(*) from publication_updates`),
    );
    check('draft patches answered 2xx = 2 per live draft', draftIds.length * 2, keysOk('draft_patches'));
    const liveRows = await q(`
      select p.id, p.platform_product_id, p.live_revision, p.sending_revision, s.store_external_id,
             r.snapshot->'payload'->>'title' as live_title,
             (select max(u.revision) from publication_updates u
               where u.workspace_id = p.workspace_id and u.publication_id = p.id and u.status = 'applied') as newest_applied,
             (select count(*) from publication_updates u
               where u.workspace_id = p.workspace_id and u.publication_id = p.id and u.status = 'applied')::int as applied,
             (select count(*) from publication_updates u
               where u.workspace_id = p.workspace_id and u.publication_id = p.id and u.status = 'outcome_unknown')::int as unknown
        from publications p
        join stores s on s.workspace_id = p.workspace_id and s.id = p.store_id
        join record_revisions r on r.workspace_id = p.workspace_id and r.record_id = p.draft_id and r.revision = p.live_revision
       where p.status = 'published'`);
    const liveBad = [];
    let simUpdates = 0;
    for (const p of liveRows) {
      const store = workspaces.flatMap((ws) => ws.stores).find((st) => st.externalId === p.store_external_id);
      const res = await fetch(
        `${simUrl}/platform/v1/stores/${p.store_external_id}/products/${p.platform_product_id}`,
        { headers: { authorization: `Bearer ${store?.apiKey}` } },
      );
      const product = res.ok ? await res.json() : null;
      const applied = counters.updatesByProduct?.[p.platform_product_id] ?? 0;
      simUpdates += applied;
      const expectedLive = Math.max(1, p.newest_applied ?? 1);
      if (
        p.live_revision !== expectedLive ||
        p.sending_revision !== null ||
        product?.title !== p.live_title ||
        applied < p.applied ||
        applied > p.applied + p.unknown
      ) {
        liveBad.push({ ...p, simTitle: product?.title, simApplied: applied });
      }
    }
    if (liveBad.length)
      console.error('products off their live revision:', JSON.stringify(liveBad.slice(0, 5)));
    check(
      "products' live revision = newest applied update, their content = that revision, updates at the marketplace = applied",
      `${liveRows.length} ok`,
      `${liveRows.length - liveBad.length} ok (${simUpdates} updates at the marketplace)`,
      liveBad.length === 0 && liveRows.length > 0,
    );
    // Transfers become media, derived once per distinct content of a workspace.
    check(
      'succeeded transfers with a ready media',
      await one(`select count(*) from material_transfers where status = 'succeeded'`),
      await one(`select count(*) from material_transfers t join media m
                   on m.workspace_id = t.workspace_id and m.id = t.media_id
                 where t.status = 'succeeded' and m.status = 'ready' and m.checksum_sha256 = t.checksum_sha256`),
    );
    const thumbnails = under(
      path.join(objectDir, 'meta', 'workspaces'),
      /derived[/\\]sha256-[0-9a-f]+[/\\]thumbnail-\d+\.png\.json$/,
    );
    check(
      'derived media objects = distinct content (workspace, sha256) of ready media',
      await one(`select count(distinct (workspace_id, checksum_sha256)) from media where status = 'ready'`),
      thumbnails,
    );
    check(
      'syncs succeeded = syncs',
      await one(`select count(*) from store_syncs`),
      await one(`select count(*) from store_syncs where status = 'succeeded'`),
    );

    check(
      'outbox events pending',
      0,
      await one(`select count(*) from outbox_events where status = 'pending'`),
    );
    check(
      'outbox events dispatching past their lease',
      0,
      await one(`select count(*) from outbox_events where status = 'dispatching' and locked_until < now()`),
    );
    check(
      'outbox dead letters',
      0,
      await one(`select count(*) from outbox_events where status = 'dead_letter'`),
    );
    check(
      'operations stuck in pending/running',
      0,
      await one(`select count(*) from operations where status in ('pending', 'running')`),
    );
    check(
      'operations failed (other than superseded updates)',
      0,
      await one(`select count(*) from operations where status = 'failed'
                   and not (kind = 'publication.update' and error_code = 'PUBLICATION_UPDATE_SUPERSEDED')`),
    );
    const allPass = checks.every((c) => c.pass);

    // ------------------------------------------------------------------- report
    const operationsByKind = await q(
      `select kind, status, count(*)::int as n from operations group by kind, status order by kind, status`,
    );
    const outboxByStatus = await q(
      `select queue, status, count(*)::int as n from outbox_events group by queue, status order by queue, status`,
    );
    const table = [
      '| invariant | expected | actual | result |',
      '| --- | --- | --- | --- |',
      ...checks.map((c) => `| ${c.name} | ${c.expected} | ${c.actual} | ${c.pass ? 'PASS' : '**FAIL**'} |`),
    ].join('\n');
    const details = {
      logical: Object.fromEntries(
        ['stores', 'product_drafts', 'publications', 'ai_tasks', 'store_syncs', 'material_transfers'].map(
          (k) => [
            k,
            {
              keys: commands.filter((c) => c.kind === k).length,
              answered2xx: keysOk(k),
              refused: commands.filter((c) => c.kind === k && !c.ok && c.final !== 'unknown').length,
            },
          ],
        ),
      ),
      transient: stats.transient,
      replayedHeader: stats.replayedHeader,
      misuse: stats.misuse,
      unexpected: stats.unexpected.slice(0, 20),
      drain: { drained, seconds: Number(drainSeconds) },
      platform: {
        productCreateCalls: counters.productCreateCalls,
        productReplays: counters.productReplays,
        productListCalls: counters.productListCalls,
        aiCalls: counters.aiCalls,
        aiReplays: counters.aiReplays,
        verifyCalls: counters.verifyCalls,
        faults: counters.faults,
      },
      kills: kills.log,
      ...(HOSTS ? { cuts: cuts.log, recoverySeconds: Number(recoverySeconds) } : {}),
      operationsByKind,
      outboxByStatus,
    };
    console.log(`\n${table}\n`);
    console.log(JSON.stringify(details, null, 2));
    console.log(allPass ? '\nsoak: every invariant holds' : '\nsoak: INVARIANTS FAILED');
    writeFileSync(path.join(here, 'last-run.json'), JSON.stringify({ checks, details }, null, 2));

    if (!opts['no-record']) {
      const durationS = ((Date.now() - t0) / 1000).toFixed(0);
      const argv = cliArgs.join(' ');
      const md = [
        HOSTS ? '# Chaos soak over several hosts (--hosts) — recorded run' : '# Chaos soak — recorded run',
        '',
        'Written by `bench/soak/run.mjs` (see `bench/README.md`, "Chaos soak"); every run overwrites it.',
        '',
        `- date: ${startedAt.toString()} (\`date\`: ${execFileSync('date', { encoding: 'utf8' }).trim()})`,
        `- machine: ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.versions.node}, ${pgVersion(ADMIN_URL)}, Redis ${redisVersion(await redis.info('server'))}`,
        `- load before the run: \`${uptimeAtStart}\``,
        `- command: \`node bench/soak/run.mjs${argv ? ` ${argv}` : ''}\` (= \`pnpm --filter @listing/bench run ${HOSTS ? 'soak:hosts' : 'soak'}\`), duration ${durationS} s`,
        HOSTS
          ? `- hosts: one network namespace each for PostgreSQL, Redis, platform-sim, 2 APIs, 1 dispatcher, 1 worker (10.213.0.0/24 on a bridge; the soak's clients at 10.213.0.1); links cut with iptables DROP for 3–8 s; recovery bound ${RECOVERY_BOUND_S} s`
          : `- stack: platform-sim, 1 api, ${DISPATCHERS} dispatchers, ${WORKERS} workers (worker concurrency 8, lease 10 s); faults \`${JSON.stringify(faultRule)}\`; ${CLIENTS} concurrent clients`,
        ...(HOSTS
          ? [
              `- stack: worker concurrency 8, lease 10 s; faults \`${JSON.stringify(faultRule)}\`; ${CLIENTS} concurrent clients`,
            ]
          : []),
        `- result: ${allPass ? '**PASS** (exit code 0)' : '**FAIL** (exit code 1)'}; drained in ${drainSeconds} s`,
        '',
        table,
        '',
        '## Details',
        '',
        '```json',
        JSON.stringify(details, null, 2),
        '```',
        '',
      ].join('\n');
      const results = HOSTS ? 'RESULTS-hosts.md' : 'RESULTS.md';
      writeFileSync(path.join(here, results), md);
      log(`written bench/soak/${results}`);
    }
    return allPass ? 0 : 1;
  } finally {
    chaosStop = true;
    shuttingDown = true;
    await chaosLoop.catch(() => undefined);
    // Before the children: with --hosts, PostgreSQL and Redis are children too.
    await db.end().catch(() => undefined);
    await deletePrefix(redis).catch(() => undefined);
    redis.disconnect();
    killAllChildren();
    await Promise.all([...children].map((c) => c.exited));
    rmSync(objectDir, { recursive: true, force: true });
    if (HOSTS) {
      if (cuts.active) restore(...cuts.active);
      destroyHosts();
      hostPostgres?.stop();
    }
  }
}

const uptimeAtStart = execFileSync('uptime', { encoding: 'utf8' }).trim();

function pgVersion(url) {
  const v = execFileSync('psql', [url, '-tAqc', 'show server_version'], { encoding: 'utf8' }).trim();
  return `PostgreSQL ${v.split(' ')[0]}`;
}

function redisVersion(info) {
  return /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
}

async function deletePrefix(redis) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${BULL_PREFIX}:*`, 'COUNT', 1000);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

async function waitForHealth(url, child) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (!isAlive(child)) throw new Error(`${child.soakName} exited:\n${child.tail()}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${child.soakName} not healthy after 30 s`);
}

async function waitUntil(what, timeoutMs, probe) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** Runs `fn` over `items` with `width` concurrent clients. */
async function pool(items, width, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`[soak] failed: ${error.stack ?? error}`);
    killAllChildren();
    process.exit(2);
  },
);
