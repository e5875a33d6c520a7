// postinstall: builds better-sqlite3's native addon, which the simulator's state file needs.
//
// better-sqlite3's own install script (`prebuild-install || node-gyp rebuild`) downloads a prebuilt
// binary, else Node's header tarball: neither can be fetched here, so pnpm-workspace.yaml leaves
// that script off and this one runs node-gyp against the headers installed beside the running
// Node (`<prefix>/include/node`), with no download. Quick when the addon already loads, so every
// `pnpm install` may run it. The in-memory simulator (the tests) never loads the addon.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = path.resolve(__dirname, '..');

function addonLoads() {
  // In a child process: a failed dlopen must not stay cached in this one.
  const probe = "const D = require('better-sqlite3'); new D(':memory:').prepare('select 1').get();";
  return spawnSync(process.execPath, ['-e', probe], { cwd: here, stdio: 'ignore' }).status === 0;
}

/** The directory holding include/node for this very Node version, or undefined. */
function localNodeDir() {
  const candidates = [process.env.npm_config_nodedir, path.resolve(path.dirname(process.execPath), '..')];
  for (const dir of candidates.filter(Boolean)) {
    let header;
    try {
      header = fs.readFileSync(path.join(dir, 'include', 'node', 'node_version.h'), 'utf8');
    } catch {
      continue;
    }
    const part = (name) => (new RegExp(`#define NODE_${name}_VERSION (\\d+)`).exec(header) ?? [])[1];
    if (`${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}` === process.versions.node) return dir;
  }
  return undefined;
}

function main() {
  if (addonLoads()) return 0;
  const packageDir = path.dirname(require.resolve('better-sqlite3/package.json', { paths: [here] }));
  const nodeDir = localNodeDir();
  const args = ['rebuild', '--release', '--jobs=max'];
  if (nodeDir) args.push(`--nodedir=${nodeDir}`);
  else console.warn('platform-sim: no local Node headers; node-gyp will try to download them');
  console.log(`platform-sim: building better-sqlite3 (node-gyp ${args.join(' ')})`);
  // pnpm puts its bundled node-gyp on PATH for lifecycle scripts.
  const build = spawnSync('node-gyp', args, { cwd: packageDir, stdio: 'inherit' });
  if (build.error) {
    console.error(`platform-sim: cannot run node-gyp (${build.error.message}); run this under pnpm install`);
    return 1;
  }
  if (build.status !== 0 || !addonLoads()) {
    console.error(
      'platform-sim: better-sqlite3 did not build (node-gyp needs python3, make and a C++ compiler)',
    );
    return 1;
  }
  return 0;
}

process.exitCode = main();
