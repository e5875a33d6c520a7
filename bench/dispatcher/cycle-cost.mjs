// PostgreSQL CPU of the dispatcher's fast-lane cycle under a trickle: k workspaces with one new
// event each per cycle, claimed through OutboxRepository.markAndClaim as the dispatcher does.
// Ways of marking what the previous cycle delivered, side by side:
//   every cycle   the previous cycle's marks ride with this cycle's claims (one mark statement
//                 per workspace per cycle: the dispatcher before the 50 ms mark gathering)
//   gathered      marks wait and go every 50 cycles, one statement per workspace (a stand-in for
//                 the dispatcher's 50 ms / 500 events gathering)
//   claim only    no marks at all (the floor)
//   one statement the claims of all k workspaces and the marks in one statement each, through
//                 SECURITY DEFINER functions (an idea that was measured and rejected: not cheaper)
// Backend CPU per cycle from /proc of the one pooled connection; Node CPU per cycle from
// process.cpuUsage. With --in-flight N, N more events of the first workspace sit claimed
// ('dispatching') the whole time, as under a backlog or after a dispatcher died.
//
//   node bench/dispatcher/cycle-cost.mjs [--cycles 3000] [--reps 2] [--ks 1,2,4] [--in-flight 0]
//
// Drops and recreates BENCH_DATABASE_URL (default
// postgres://app_user:app_user@127.0.0.1:5432/listing_bench_cycle; the name must contain `bench`)
// with packages/db/dist/setup-cli.js (run `pnpm run build` first), drops it at the end.
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { createBenchDatabase } from '../lib/bench-database.mjs';
import { cpuMs } from '../lib/proc-cpu.mjs';

const require = createRequire(import.meta.url);
const { Database } = require('@listing/db');
const { OutboxRepository } = require('@listing/outbox');

const { values: args } = parseArgs({
  options: {
    cycles: { type: 'string', default: '3000' },
    reps: { type: 'string', default: '2' },
    ks: { type: 'string', default: '1,2,4' },
    'in-flight': { type: 'string', default: '0' },
  },
});
const { asRole, owner, workspaces, drop: dropDatabase } = await createBenchDatabase('listing_bench_cycle');
// The dispatcher's role (sql/012): the repository's claims and marks run as it.
const agentUrl = asRole('outbox_agent');

// The rejected "one statement" way (bench database only).
await owner.query(`
  create function bench_claim_many(p_ws uuid[], p_locked_by text, p_limit integer, p_lease_ms integer)
    returns setof outbox_events language plpgsql volatile security definer
    set search_path = pg_catalog, public set enable_seqscan = off as $$
    begin
      return query
        update outbox_events e set status = 'dispatching', locked_by = p_locked_by,
               locked_until = now() + p_lease_ms * interval '1 millisecond', updated_at = now()
          from (select c.id from unnest(p_ws) w(id) cross join lateral
                 (select c.id from outbox_events c
                   where c.workspace_id = w.id and c.status = 'pending' and c.next_attempt_at <= now()
                   order by c.next_attempt_at limit p_limit for update skip locked) c) due
         where e.id = due.id returning e.*;
    end $$;
  create function bench_mark_many(p_locked_by text, p_ids uuid[]) returns integer
    language plpgsql volatile security definer set search_path = pg_catalog, public set enable_seqscan = off as $$
    declare marked integer;
    begin
      update outbox_events set status = 'dispatched', dispatched_at = now(), locked_by = null,
             locked_until = null, last_error = null, updated_at = now()
       where id = any (p_ids) and status = 'dispatching' and locked_by = p_locked_by;
      get diagnostics marked = row_count;
      return marked;
    end $$;
  grant execute on function bench_claim_many(uuid[], text, integer, integer), bench_mark_many(text, uuid[]) to outbox_agent;`);

const db = new Database({ connectionString: agentUrl, max: 1, applicationName: 'bench-cycle' });
const repository = new OutboxRepository(db);
const pid = (await db.pool.query('select pg_backend_pid() as p')).rows[0].p;
const backendCpuUs = () => cpuMs(pid) * 1000;

let seq = 0;
/** One pending event in each of the first k workspaces (as the owner, not measured). */
async function seed(k) {
  const values = workspaces
    .slice(0, k)
    .map((w) => `(gen_random_uuid(), '${w}', 'q', 'bench.cycle', '{"seq":${seq++}}')`)
    .join(',');
  await owner.query(
    `insert into outbox_events (id, workspace_id, queue, event_type, payload) values ${values}`,
  );
}

/** One mark request per workspace (Map.groupBy is not in Node 20). */
function marksOf(events) {
  const byWorkspace = new Map();
  for (const e of events) byWorkspace.set(e.workspaceId, [...(byWorkspace.get(e.workspaceId) ?? []), e.id]);
  return [...byWorkspace].map(([workspaceId, ids]) => ({ workspaceId, ids }));
}
let gathered = [];
let cycleNo = 0;
const ways = {
  'every cycle': async (k, previous) =>
    (
      await repository.markAndClaim(marksOf(previous), workspaces.slice(0, k), 'bench', 500, 60_000)
    ).claimed.flat(),
  gathered: async (k, previous) => {
    gathered.push(...previous);
    const marks = ++cycleNo % 50 === 0 ? marksOf(gathered.splice(0)) : [];
    return (
      await repository.markAndClaim(marks, workspaces.slice(0, k), 'bench', 500, 60_000)
    ).claimed.flat();
  },
  'claim only': async (k) =>
    (await repository.markAndClaim([], workspaces.slice(0, k), 'bench', 500, 60_000)).claimed.flat(),
  'one statement': async (k, previous) => {
    const parts = [`SELECT set_config('synchronous_commit', 'off', true)`];
    if (previous.length)
      parts.push(`SELECT bench_mark_many('bench', '{${previous.map((e) => e.id).join(',')}}')`);
    parts.push(
      `SELECT id, workspace_id, queue, event_type, payload, attempt_count, max_attempts, created_at, locked_until ` +
        `FROM bench_claim_many('{${workspaces.slice(0, k).join(',')}}', 'bench', 500, 60000)`,
    );
    const results = await db.pool.query(parts.join(';\n'));
    return results.at(-1).rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id }));
  },
};

const inFlight = Number(args['in-flight']);
const rows = [];
for (let rep = 1; rep <= Number(args.reps); rep++) {
  for (const k of args.ks.split(',').map(Number)) {
    for (const [way, cycle] of Object.entries(ways)) {
      await owner.query('truncate outbox_events');
      if (inFlight) {
        await owner.query(
          `insert into outbox_events (id, workspace_id, queue, event_type, payload, status, locked_by, locked_until)
           select gen_random_uuid(), $1, 'q', 'bench.cycle', '{}', 'dispatching', 'elsewhere', now() + interval '1 hour'
             from generate_series(1, $2::integer)`,
          [workspaces[0], inFlight],
        );
      }
      gathered = [];
      let previous = [];
      for (let i = 0; i < 300; i++) {
        await seed(k);
        previous = await cycle(k, previous);
      }
      const n = Number(args.cycles);
      let nodeUs = 0;
      const backend0 = backendCpuUs();
      for (let i = 0; i < n; i++) {
        await seed(k);
        const cpu0 = process.cpuUsage();
        previous = await cycle(k, previous);
        const cpu = process.cpuUsage(cpu0);
        nodeUs += cpu.user + cpu.system;
      }
      rows.push({ rep, k, way, backendUs: (backendCpuUs() - backend0) / n, nodeUs: nodeUs / n });
    }
  }
}
await db.close();
await owner.end();
await dropDatabase();

console.log(`in flight: ${inFlight}; ${args.cycles} cycles per cell; µs of CPU per cycle (reps)\n`);
console.log('| k | way | PostgreSQL backend | Node |');
console.log('|---:|---|---|---|');
for (const k of args.ks.split(',').map(Number)) {
  for (const way of Object.keys(ways)) {
    const mine = rows.filter((r) => r.k === k && r.way === way);
    console.log(
      `| ${k} | ${way} | ${mine.map((r) => r.backendUs.toFixed(0)).join(', ')} | ${mine.map((r) => r.nodeUs.toFixed(0)).join(', ')} |`,
    );
  }
}
