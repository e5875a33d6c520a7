/* global setTimeout, process */
// The naive outbox that run.mjs measures beside the project's (`--latency-modes naive`), in its
// own process as a dispatcher would be: writers INSERT one row per commit into `naive_outbox`,
// whose statement-level trigger sends NOTIFY; this loop LISTENs and, per wake-up, runs cycles of
// one transaction each (claim up to 500 rows FOR UPDATE SKIP LOCKED → BullMQ addBulk with
// jobId `naive-<row id>`, BullMQ refusing integer ids → mark them dispatched → COMMIT) until a
// claim comes back short. A 1 s poll covers a lost notification. No leases, no workspaces, no backoff: the reference is what a
// first implementation would do, not a competitor.
// argv: databaseUrl queue prefix redisUrl. Messages out: { ready: true }.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';

const [databaseUrl, queueName, prefix, redisUrl] = process.argv.slice(2);
const listener = new pg.Client({ connectionString: databaseUrl, application_name: 'naive-dispatcher' });
const claimer = new pg.Client({ connectionString: databaseUrl, application_name: 'naive-dispatcher' });
await listener.connect();
await claimer.connect();
const queue = new Queue(queueName, {
  connection: new Redis(redisUrl, { maxRetriesPerRequest: null }),
  prefix,
});

let running = false;
let again = false;

async function cycle() {
  await claimer.query('begin');
  try {
    const { rows } = await claimer.query(
      `select id, payload from naive_outbox where dispatched_at is null
        order by id limit 500 for update skip locked`,
    );
    if (rows.length) {
      await queue.addBulk(
        rows.map((r) => ({ name: 'bench.latency', data: r.payload, opts: { jobId: `naive-${r.id}` } })),
      );
      await claimer.query('update naive_outbox set dispatched_at = now() where id = any($1::bigint[])', [
        rows.map((r) => r.id),
      ]);
    }
    await claimer.query('commit');
    return rows.length;
  } catch (error) {
    await claimer.query('rollback');
    throw error;
  }
}

async function wake() {
  if (running) {
    again = true;
    return;
  }
  running = true;
  try {
    do {
      again = false;
      while ((await cycle()) === 500);
    } while (again);
  } finally {
    running = false;
  }
}

listener.on('notification', () => void wake());
await listener.query('listen naive_outbox');
const poll = () => setTimeout(() => void wake().finally(poll), 1000);
poll();
process.on('message', async (m) => {
  if (m.cmd === 'stop') process.exit(0);
});
process.send({ ready: true });
