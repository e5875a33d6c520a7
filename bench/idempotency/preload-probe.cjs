'use strict';
/**
 * Profiling probe, preloaded into the API process only by `run.mjs --profile` (never in the
 * measured runs): counts pg round trips (Client#query calls, i.e. one per statement batch sent)
 * and, with BENCH_CPU_PROFILE=<file>, records a V8 CPU profile. On an IPC message it writes
 * `{ queries }` to BENCH_PROBE_OUT and resets the counter (see the handler for the profile).
 * Application code is untouched: this patches pg's prototype from the outside.
 */
const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

const apiRequire = createRequire(path.resolve(process.argv[1]));
const { Client } = apiRequire('pg');

let queries = 0;
const original = Client.prototype.query;
Client.prototype.query = function countedQuery(...args) {
  queries++;
  return original.apply(this, args);
};

let session;
const profileFile = process.env.BENCH_CPU_PROFILE;
if (profileFile) {
  const inspector = require('node:inspector');
  session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
}

let messages = 0;
// Commands arrive over the IPC channel (run.mjs spawns the API with 'ipc'); not a signal:
// Nest's enableShutdownHooks() shuts the app down on SIGUSR2 and most others.
process.on('message', (message) => {
  if (message !== 'bench-probe') return;
  // 1st message: reset the counter and start the profiler (the measured window begins).
  // Later messages: write { queries } since the previous signal, reset; the 2nd also stops the
  // profiler and writes the profile.
  messages++;
  const out = process.env.BENCH_PROBE_OUT;
  const snapshot = { queries };
  queries = 0;
  const finish = () => {
    if (out) fs.writeFileSync(out, JSON.stringify(snapshot));
    process.send?.({ type: 'bench-probe', ...snapshot });
  };
  if (!session) return finish();
  if (messages === 1) {
    session.post('Profiler.start');
    return finish();
  }
  if (messages !== 2) return finish();
  session.post('Profiler.stop', (error, result) => {
    if (!error && result) fs.writeFileSync(profileFile, JSON.stringify(result.profile));
    finish();
  });
});
