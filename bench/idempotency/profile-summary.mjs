#!/usr/bin/env node
/**
 * Summarises a V8 .cpuprofile (written by `run.mjs --profile --cpu-prof`): self time by
 * function and by package/area. Usage: node bench/idempotency/profile-summary.mjs <file> [top]
 */
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary.mjs <file.cpuprofile> [top]');
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const dt = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const total = [...dt.values()].reduce((a, b) => a + b, 0);

function area(url) {
  if (!url) return '(native/V8)';
  const m = url.match(/node_modules\/\.pnpm\/([^/]+)\//) ?? url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (m) return m[1].replace(/@\d[^_]*$/, '').replace(/@[\d.]+(_.*)?$/, '');
  if (url.startsWith('node:')) return 'node core';
  const r = url.match(/\/work\/[^/]+\/(apps\/[^/]+|packages\/[^/]+)/);
  return r ? r[1] : url;
}

const fn = new Map();
const areas = new Map();
for (const [id, t] of dt) {
  const { callFrame: f } = byId.get(id);
  const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
  fn.set(key, (fn.get(key) ?? 0) + t);
  const a = area(f.url);
  areas.set(a, (areas.get(a) ?? 0) + t);
}
const pct = (t) => ((100 * t) / total).toFixed(1).padStart(5) + '%';
console.log(`total sampled ${(total / 1000).toFixed(0)} ms`);
console.log('\nself time by area:');
for (const [k, t] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(pct(t), k);
console.log('\nself time by function:');
for (const [k, t] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(pct(t), k);
