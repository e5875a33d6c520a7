// Node CPU per commit of the outbox's write path, taken apart: at 1,000 events/s the load
// generator (the "API" of bench/dispatcher B) spends more per event than the naive outbox's one
// INSERT, and this says where. Each way commits --events transactions, --in-flight at a time,
// against a real PostgreSQL; ways alternate over --reps rounds; medians.
//   naive insert      the naive loop's writer: one parameterized INSERT, autocommit
//   raw message       the project's COMMIT message (BEGIN, binding, the prepared insert, COMMIT)
//                     sent by hand on a pg Pool: the floor for Database + OutboxWriter
//   transaction only  Database.withWorkspace around an empty body (nothing is sent)
//   append            Database.withWorkspace + OutboxWriter.append, no wake-up
//   append + nudge, no Redis   the nudger's scheduling with a publish that resolves at once
//   append + nudge    the same with the coalesced Redis PUBLISH (as the API)
// Node CPU per commit from process.cpuUsage; the backends' CPU is not this script's subject.
//
//   node bench/dispatcher/writer-cost.mjs [--events 5000] [--reps 3] [--in-flight 4] [--ways append,...]
//
// Drops and recreates BENCH_DATABASE_URL (default
// postgres://app_user:app_user@127.0.0.1:5432/listing_bench_writer; the name must contain `bench`)
// with packages/db/dist/setup-cli.js (run `pnpm run build` first), drops it at the end.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createBenchDatabase } from '../lib/bench-database.mjs';

const require = createRequire(import.meta.url);
const { Database } = require('@listing/db');
const { OUTBOX_INSERT_EVENT, OutboxNudger, OutboxWriter, connectProducerRedis } = require('@listing/outbox');

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '5000' },
    reps: { type: 'string', default: '3' },
    'in-flight': { type: 'string', default: '4' },
    ways: { type: 'string' }, // comma-separated names, e.g. for --cpu-prof of one way
  },
});
const EVENTS = Number(args.events);
const IN_FLIGHT = Number(args['in-flight']);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const {
  appUrl: APP_URL,
  owner,
  workspaces,
  drop: dropDatabase,
} = await createBenchDatabase('listing_bench_writer', { max: IN_FLIGHT });
await owner.query(`create table naive_outbox (id bigserial primary key, payload jsonb not null,
  created_at timestamptz not null default now(), dispatched_at timestamptz)`);

const db = new Database({ connectionString: APP_URL, max: IN_FLIGHT, applicationName: 'bench-writer' });
const raw = new pg.Pool({ connectionString: APP_URL, max: IN_FLIGHT });
const redis = connectProducerRedis({ url: REDIS_URL });
await new Promise((r) => redis.once('ready', r));
const plain = new OutboxWriter(db, {});
const nudged = new OutboxWriter(db, { nudger: new OutboxNudger(redis, 'bench-writer:nudge', 2) });
// The nudger's scheduling without Redis: a publish that resolves at once.
const unsent = new OutboxWriter(db, {
  nudger: new OutboxNudger({ publish: async () => 0 }, 'bench-writer:nudge', 2),
});
const event = (i) => ({ queue: 'bench-writer', type: 'bench.writer', payload: { seq: i } });
const ws = (i) => workspaces[i % workspaces.length];

// The message the project's writer sends, by hand (values inlined as Database does), with the
// repository's own statement.
const preparedOn = new WeakSet();
async function rawMessage(i) {
  const client = await raw.connect();
  try {
    if (!preparedOn.has(client)) {
      await client.query(`PREPARE s_${OUTBOX_INSERT_EVENT.name} AS ${OUTBOX_INSERT_EVENT.text}`);
      preparedOn.add(client);
    }
    const w = ws(i);
    await client.query(
      `BEGIN; SELECT set_config('app.workspace_id', '${w}', true);\n` +
        `EXECUTE s_${OUTBOX_INSERT_EVENT.name}('${randomUUID()}'::uuid, '${w}'::uuid, 'bench-writer', 'bench.writer', ` +
        `'{"seq":${i}}', 10, NULL, NULL, NULL);\nCOMMIT`,
    );
  } finally {
    client.release();
  }
}

const ways = {
  'naive insert': (i) =>
    owner.query('insert into naive_outbox (payload) values ($1) returning id', [{ seq: i }]),
  'raw message': rawMessage,
  'transaction only': (i) => db.withWorkspace(ws(i), async () => undefined),
  append: (i) => db.withWorkspace(ws(i), () => plain.append(event(i))),
  'append + nudge, no Redis': (i) => db.withWorkspace(ws(i), () => unsent.append(event(i))),
  'append + nudge': (i) => db.withWorkspace(ws(i), () => nudged.append(event(i))),
};

async function run(fn, n) {
  let next = 0;
  const lane = async () => {
    while (next < n) await fn(next++);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
}

if (args.ways) {
  const keep = new Set(args.ways.split(','));
  for (const name of Object.keys(ways)) if (!keep.has(name)) delete ways[name];
}
const results = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
for (const fn of Object.values(ways)) await run(fn, 500); // warm: pools, plans, JIT
for (let rep = 0; rep < Number(args.reps); rep++) {
  const order = Object.keys(ways);
  for (let k = 0; k < rep; k++) order.push(order.shift()); // rotate the order per round
  for (const name of order) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await run(ways[name], EVENTS);
    const { user: u, system: s } = process.cpuUsage(cpu0);
    results[name].push({ cpu: (u + s) / EVENTS, rate: EVENTS / ((performance.now() - t0) / 1000) });
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `Node CPU per commit (${EVENTS} commits per way and round, ${IN_FLIGHT} in flight, ${args.reps} rounds; ` +
    `${cpus().length} cores (${cpus()[0]?.model.trim()}), Node ${process.version}, ${new Date().toISOString()})\n`,
);
console.log('| way | Node CPU µs per commit (median) | per round | commits/s (median) |');
console.log('|---|---:|---|---:|');
for (const [name, rs] of Object.entries(results)) {
  const cpu = rs.map((r) => r.cpu);
  console.log(
    `| ${name} | ${median(cpu).toFixed(0)} | ${cpu.map((c) => c.toFixed(0)).join(', ')} | ${median(rs.map((r) => r.rate)).toFixed(0)} |`,
  );
}
await Promise.all([db.close(), raw.end(), owner.end(), redis.quit()]);
await dropDatabase();
