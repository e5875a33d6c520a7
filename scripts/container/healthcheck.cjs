// The image's HEALTHCHECK: probes the role the entry point started (it wrote /tmp/listing-role).
'use strict';
const { readFileSync } = require('node:fs');

let role = 'api';
try {
  role = readFileSync('/tmp/listing-role', 'utf8').trim();
} catch {
  // not started yet: probe as the api
}
const port =
  { api: process.env.PORT || 3000, 'platform-sim': process.env.PORT || 4010 }[role] ??
  process.env.OPS_PORT ??
  9464;
const path = role === 'platform-sim' ? '/health' : '/health/ready';
if (role === 'migrate' || role === 'cli') process.exit(0);
fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2500) }).then(
  (res) => process.exit(res.ok ? 0 : 1),
  () => process.exit(1),
);
