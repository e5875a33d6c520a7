/* global performance, process */
// A BullMQ worker in its own process, as in production (apps/api/dist/worker.js runs apart from
// the API and the dispatcher), so the load generator of run.mjs does not share its event loop.
// Forked by run.mjs with IPC. argv: queue prefix redisUrl concurrency [manual].
// With `manual` the worker takes no job before { cmd: 'go' } (throughput runs over a prefilled
// queue start the clock there).
// Messages in:  { cmd: 'expect', count }  → answers { done, at } once `count` jobs completed
//               { cmd: 'go' }             → starts a manual worker (no answer)
//               { cmd: 'collect' }        → answers { started: [[jobId, startedAt, job.timestamp,
//                                            job.processedOn]] } (processedOn: when this worker
//                                            asked Redis to move the job to active)
//               { cmd: 'stop' }           → closes the worker and exits 0
// The handler does nothing but record its start time (performance.timeOrigin + now(): the
// same clock as run.mjs's commit timestamps, sub-millisecond).
import { Worker } from 'bullmq';

const [queue, prefix, redisUrl, concurrency, manual] = process.argv.slice(2);
const url = new URL(redisUrl);
const now = () => performance.timeOrigin + performance.now();
const started = [];
let completed = 0;
let expected = Infinity;

const worker = new Worker(
  queue,
  async (job) => {
    started.push([job.id, now(), job.timestamp, job.processedOn]);
  },
  {
    connection: { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null },
    prefix,
    concurrency: Number(concurrency),
    autorun: manual !== 'manual',
  },
);
worker.on('completed', () => {
  completed++;
  if (completed === expected) process.send({ done: completed, at: now() });
});

process.on('message', async (m) => {
  if (m.cmd === 'expect') {
    expected = m.count;
    if (completed >= expected) process.send({ done: completed, at: now() });
  } else if (m.cmd === 'go') {
    void worker.run();
  } else if (m.cmd === 'collect') {
    process.send({ started });
  } else if (m.cmd === 'stop') {
    await worker.close();
    process.exit(0);
  }
});

await worker.waitUntilReady();
process.send({ ready: true });
