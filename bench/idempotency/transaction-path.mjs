#!/usr/bin/env node
/**
 * The Database's transaction path alone, this checkout against another: each window is a fresh
 * Node process that loads one build's packages/db, warms up, then runs N transactions (10 at a
 * time) of three inserts and a select through Drizzle, bound to a workspace, and reports its CPU
 * per transaction. The builds alternate window by window (which one first alternates by round).
 * It prices a change to packages/db where the HTTP benchmark's windows move more than the change
 * could. Separate processes: two builds in one process share its heap and GC, which biased an
 * A/A comparison by 20 %.
 *
 *   node bench/idempotency/transaction-path.mjs --baseline <checkout> [--rounds 6] [--transactions 4000]
 *
 * Both checkouts must be built (packages/db/dist). Uses BENCH_TX_DATABASE (default listing_bench_tx
 * on the local server, as postgres), created for the run and dropped after it.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';

const here = path.dirname(new URL(import.meta.url).pathname);
const { values: opts } = parseArgs({
  options: {
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '6' },
    transactions: { type: 'string', default: '4000' },
    window: { type: 'string' }, // internal: run one window on this checkout, print µs per transaction
    url: { type: 'string' },
  },
});

if (opts.window) {
  const { Database, sql } = createRequire(import.meta.url)(
    path.join(opts.window, 'packages/db/dist/index.js'),
  );
  const db = new Database({ connectionString: opts.url, max: 10 });
  const ws = randomUUID();
  const one = () =>
    db.withWorkspace(ws, async () => {
      for (let i = 0; i < 3; i++) await db.executor.execute(sql`insert into t (ws, n) values (${ws}, ${i})`);
      await db.executor.execute(sql`select ${ws}::uuid as w`);
    });
  const run = async (count) => {
    let left = count;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (left-- > 0) await one();
      }),
    );
  };
  await run(500); // warm-up
  const count = Number(opts.transactions);
  const before = process.cpuUsage();
  await run(count);
  const { user, system } = process.cpuUsage(before);
  process.stdout.write(String((user + system) / count));
  await db.close();
  process.exit(0);
}

if (!opts.baseline) throw new Error('usage: transaction-path.mjs --baseline <checkout>');
const admin = process.env.ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = process.env.BENCH_TX_DATABASE ?? 'listing_bench_tx';
if (!name.includes('bench')) throw new Error('the database name must contain "bench"');
const adminQuery = async (text) => {
  const client = new pg.Client(admin);
  await client.connect();
  await client.query(text);
  await client.end();
};
await adminQuery(`drop database if exists ${name}`);
await adminQuery(`create database ${name}`);
const url = new URL(admin);
url.pathname = `/${name}`;
const table = new pg.Client(url.toString());
await table.connect();
await table.query('create table t (ws uuid not null, n int not null)');

const builds = [
  { label: 'current', root: path.resolve(here, '../..'), cpu: [] },
  { label: 'baseline', root: path.resolve(opts.baseline), cpu: [] },
];
for (let round = 0; round < Number(opts.rounds); round++) {
  for (const build of round % 2 ? [...builds].reverse() : builds) {
    await table.query('truncate t');
    const out = execFileSync(process.execPath, [
      new URL(import.meta.url).pathname,
      '--window',
      build.root,
      '--url',
      url.toString(),
      '--transactions',
      opts.transactions,
    ]);
    build.cpu.push(Number(out.toString()));
  }
}
await table.end();
await adminQuery(`drop database if exists ${name}`);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
console.log('| build | CPU µs per transaction, per round | median |\n|---|---|---:|');
for (const b of builds)
  console.log(`| ${b.label} | ${b.cpu.map((x) => x.toFixed(0)).join(' / ')} | ${median(b.cpu).toFixed(0)} |`);
console.log(`\ncurrent / baseline (medians): ${(median(builds[0].cpu) / median(builds[1].cpu)).toFixed(3)}`);
