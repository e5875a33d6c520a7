import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AGENT_ROLE, APP_ROLE, OWNER_ROLE } from '@listing/db';
import { Client } from 'pg';
import { freeTcpPort, viaLocalPort } from './cuttable-proxy';

export interface PgBouncerOptions {
  /** The PostgreSQL server behind it (host and port of this URL). */
  serverUrl: string;
  /** Server connections per (database, user) pair: small, so transactions share them. */
  poolSize?: number;
  poolMode?: 'transaction' | 'session';
}

export interface RunningPgBouncer {
  readonly port: number;
  /** `url` with its host and port replaced by the pooler's. */
  via(url: string): string;
  /** SHOW <what> on the admin console (e.g. 'POOLS', 'SERVERS'), as rows. */
  show(what: string): Promise<Array<Record<string, string>>>;
  stop(): Promise<void>;
}

export const PGBOUNCER_BIN = process.env.PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer';

/**
 * Debian's PgBouncer on a free loopback port in front of the test PostgreSQL, in transaction mode
 * by default: every transaction may run on another server connection, as in deployments that
 * pool. Authentication is trust for the project's roles (the test server trusts loopback). It
 * refuses to run as root, so it is started as `postgres` when the tests run as root.
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<RunningPgBouncer> {
  if (!existsSync(PGBOUNCER_BIN)) {
    throw new Error(
      `PgBouncer is not installed at ${PGBOUNCER_BIN}: apt-get install pgbouncer (scripts/test.sh does), or set PGBOUNCER_BIN`,
    );
  }
  const server = new URL(options.serverUrl);
  const port = await freeTcpPort();
  const dir = mkdtempSync(path.join(tmpdir(), 'pgbouncer-'));
  chmodSync(dir, 0o755);
  const users = [APP_ROLE, AGENT_ROLE, OWNER_ROLE, 'pgbouncer'];
  writeFileSync(path.join(dir, 'users.txt'), users.map((u) => `"${u}" "${u}"`).join('\n') + '\n');
  writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      "unix_socket_dir = ''",
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      'admin_users = pgbouncer',
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 2}`,
      'max_client_conn = 500',
      'max_db_connections = 0',
      // What node-postgres may send at startup that PgBouncer does not track.
      'ignore_startup_parameters = extra_float_digits,options',
      'server_reset_query =',
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  const child: ChildProcess = spawn(
    PGBOUNCER_BIN,
    [...(asRoot ? ['-u', 'postgres'] : []), path.join(dir, 'pgbouncer.ini')],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  // Its log goes to stderr (no logfile: the directory may not be writable by `postgres`).
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
  const via = (url: string) => viaLocalPort(url, port);
  const admin = via(`postgres://pgbouncer:pgbouncer@127.0.0.1/pgbouncer`);
  await waitForPort(port, child, () => stderr);
  return {
    port,
    via,
    async show(what) {
      // The admin console speaks the simple protocol only (pg uses it for a query without values).
      const client = new Client({ connectionString: admin });
      await client.connect();
      try {
        return (await client.query<Record<string, string>>(`SHOW ${what}`)).rows;
      } finally {
        await client.end();
      }
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, child: ChildProcess, stderr: () => string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${stderr()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`pgbouncer did not listen on ${port}: ${stderr()}`);
}
