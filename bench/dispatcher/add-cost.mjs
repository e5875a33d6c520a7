// CPU cost of putting k jobs into BullMQ: one `Queue.addBulk` call against k `Queue.add` calls sent
// together (what QueueProducer does for up to 16 jobs). Node CPU per batch from process.cpuUsage,
// Redis CPU per job from INFO cpu; sequential batches, interleaved, several reps.
//
//   node bench/dispatcher/add-cost.mjs [--ks 1,2,3,4,8,16,64,500] [--reps 3]
//
// Needs the local Redis (REDIS_URL, default redis://127.0.0.1:6379); uses and deletes the BullMQ
// prefix `bench-add-cost`. Results: bench/dispatcher/RESULTS.md.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';

const { values: args } = parseArgs({
  options: { ks: { type: 'string', default: '1,2,3,4,8,16,64,500' }, reps: { type: 'string', default: '3' } },
});
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const queue = new Queue('add-cost', { connection: redis, prefix: 'bench-add-cost' });
await queue.waitUntilReady();

// The dispatcher's job shape (QueueProducer.job).
const opts = () => ({
  jobId: randomUUID(),
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 86_400 },
  removeOnFail: { age: 604_800 },
});
const data = () => ({
  v: 1,
  workspaceId: randomUUID(),
  payload: { draftId: randomUUID() },
  createdAt: Date.now(),
});

async function redisCpuUs() {
  const info = await redis.info('cpu');
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(info)[1]);
  const user = Number(/used_cpu_user:([\d.]+)/.exec(info)[1]);
  return (sys + user) * 1e6;
}

const ways = {
  addBulk: (k) => queue.addBulk(Array.from({ length: k }, () => ({ name: 'e', data: data(), opts: opts() }))),
  'add × k': (k) => Promise.all(Array.from({ length: k }, () => queue.add('e', data(), opts()))),
};

const rows = [];
for (let rep = 1; rep <= Number(args.reps); rep++) {
  for (const k of args.ks.split(',').map(Number)) {
    const batches = Math.max(20, Math.round(4000 / k));
    for (const [way, add] of Object.entries(ways)) {
      for (let i = 0; i < 100; i++) await add(k); // warm-up
      const redis0 = await redisCpuUs();
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < batches; i++) await add(k);
      const cpu = process.cpuUsage(cpu0);
      const redisUs = (await redisCpuUs()) - redis0;
      rows.push({
        rep,
        k,
        way,
        nodeUsPerBatch: (cpu.user + cpu.system) / batches,
        redisUsPerJob: redisUs / batches / k,
      });
    }
  }
}
await queue.obliterate({ force: true });
await queue.close();
redis.disconnect();

console.log('| k | way | Node µs per batch (reps) | median | Redis µs per job (median) |');
console.log('|---:|---|---|---:|---:|');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const k of args.ks.split(',').map(Number)) {
  for (const way of Object.keys(ways)) {
    const mine = rows.filter((r) => r.k === k && r.way === way);
    const node = mine.map((r) => r.nodeUsPerBatch);
    console.log(
      `| ${k} | ${way} | ${node.map((n) => n.toFixed(0)).join(', ')} | ${median(node).toFixed(0)} | ${median(mine.map((r) => r.redisUsPerJob)).toFixed(0)} |`,
    );
  }
}
