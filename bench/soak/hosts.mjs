/**
 * The soak's several-hosts topology (`--hosts`): one network namespace per host, joined by a
 * bridge in the root namespace, where the soak itself (the clients, the invariant checks) runs as
 * 10.213.0.1. PostgreSQL and Redis are servers of their own inside their hosts (not the machine's:
 * those listen on loopback only). A link between two hosts is cut with iptables DROP rules in the
 * first host's namespace, both directions: packets vanish, nothing is refused or reset, as in a
 * partition. Linux only, as root (ip netns, iptables).
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const NET = '10.213.0';
const BRIDGE = 'lsoak0';
const HOST_IDS = { db: 10, redis: 11, sim: 12, api0: 21, api1: 22, dispatcher: 31, worker: 41 };
export const HOST_NAMES = Object.keys(HOST_IDS);

export const addressOf = (host) => `${NET}.${HOST_IDS[host]}`;
const nsOf = (host) => `lsoak-${host}`;
const sh = (cmd, args) => execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
const quiet = (cmd, args) => {
  try {
    sh(cmd, args);
  } catch {
    // already gone
  }
};

/** `argv` run inside `host`'s namespace (ip netns exec execs it: the pid is the program's). */
export const inHost = (host, argv) => ['ip', ['netns', 'exec', nsOf(host), ...argv]];

/** Refuses to start where namespaces cannot be made, with what is missing. */
export function assertHostsPossible() {
  if (process.getuid?.() !== 0) throw new Error('--hosts needs root (network namespaces, iptables)');
  for (const bin of ['ip', 'iptables']) {
    try {
      execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
    } catch {
      throw new Error(`--hosts needs ${bin} (apt-get install iproute2 iptables)`);
    }
  }
}

export function createHosts() {
  destroyHosts(); // a run killed before its cleanup left them
  sh('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
  sh('ip', ['addr', 'add', `${NET}.1/24`, 'dev', BRIDGE]);
  sh('ip', ['link', 'set', BRIDGE, 'up']);
  for (const host of HOST_NAMES) {
    const ns = nsOf(host);
    const outer = `ls-${host}`.slice(0, 15);
    sh('ip', ['netns', 'add', ns]);
    sh('ip', ['link', 'add', outer, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    sh('ip', ['link', 'set', outer, 'master', BRIDGE, 'up']);
    sh('ip', ['-n', ns, 'addr', 'add', `${addressOf(host)}/24`, 'dev', 'eth0']);
    sh('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  }
}

export function destroyHosts() {
  for (const host of HOST_NAMES) quiet('ip', ['netns', 'del', nsOf(host)]);
  quiet('ip', ['link', 'del', BRIDGE]);
}

const rules = (peer) => [
  ['OUTPUT', '-d', addressOf(peer)],
  ['INPUT', '-s', addressOf(peer)],
];

/** Drops every packet between `a` and `b` (rules in `a`'s namespace, both directions). */
export function cut(a, b) {
  for (const [chain, ...match] of rules(b))
    sh('ip', ['netns', 'exec', nsOf(a), 'iptables', '-I', chain, ...match, '-j', 'DROP']);
}

export function restore(a, b) {
  for (const [chain, ...match] of rules(b))
    sh('ip', ['netns', 'exec', nsOf(a), 'iptables', '-D', chain, ...match, '-j', 'DROP']);
}

function postgresBin(name) {
  const versions = readdirSync('/usr/lib/postgresql').sort((x, y) => Number(x) - Number(y));
  const bin = path.join('/usr/lib/postgresql', versions.at(-1), 'bin', name);
  if (!existsSync(bin)) throw new Error(`--hosts needs the PostgreSQL server binaries (${bin})`);
  return bin;
}

/**
 * A PostgreSQL server of its own in the db host (initdb as `postgres`, trust for the subnet),
 * listening on the host's address. Returns its superuser URL and a stop function.
 */
export async function startHostPostgres(spawnInHost) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lsoak-pg-'));
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
  chownSync(dir, uid, gid);
  const data = path.join(dir, 'data');
  execFileSync('runuser', ['-u', 'postgres', '--', postgresBin('initdb'), '-D', data, '-U', 'postgres',
    '--auth=trust', '-E', 'UTF8', '--no-instructions'], { stdio: ['ignore', 'ignore', 'pipe'] }); // prettier-ignore
  appendFileSync(path.join(data, 'pg_hba.conf'), `host all all ${NET}.0/24 trust\n`);
  // setpriv execs (runuser would fork): the soak's SIGKILL then reaches the postmaster itself.
  const child = spawnInHost('postgres', 'db', ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', postgresBin('postgres'),
    '-D', data, '-c', `listen_addresses=${addressOf('db')}`, '-c', `unix_socket_directories=${dir}`,
    '-c', 'max_connections=300', '-c', 'fsync=off']); // prettier-ignore
  const url = `postgres://postgres:postgres@${addressOf('db')}:5432/postgres`;
  for (let i = 0; ; i++) {
    try {
      execFileSync('pg_isready', ['-q', '-h', addressOf('db'), '-p', '5432']);
      break;
    } catch {
      if (i > 200) throw new Error(`PostgreSQL in the db host did not start:\n${child.tail()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, stop: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A redis-server of its own in the redis host, nothing kept on disk. */
export async function startHostRedis(spawnInHost) {
  const child = spawnInHost('redis', 'redis', ['redis-server', '--bind', addressOf('redis'), '--port', '6379',
    '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--dir', os.tmpdir()]); // prettier-ignore
  const url = `redis://${addressOf('redis')}:6379`;
  for (let i = 0; ; i++) {
    try {
      execFileSync('redis-cli', ['-h', addressOf('redis'), 'ping'], { stdio: 'ignore' });
      return { url };
    } catch {
      if (i > 100) throw new Error(`Redis in the redis host did not start:\n${child.tail()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
