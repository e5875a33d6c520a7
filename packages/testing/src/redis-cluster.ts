import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freeTcpPort } from './cuttable-proxy';
import { waitFor } from './wait-for';

const run = promisify(execFile);

export const REDIS_SERVER_BIN = process.env.REDIS_SERVER_BIN ?? 'redis-server';
export const REDIS_CLI_BIN = process.env.REDIS_CLI_BIN ?? 'redis-cli';

export interface RunningRedisCluster {
  /** The masters' client ports on 127.0.0.1. */
  readonly ports: readonly number[];
  /** A seed node's URL (clients discover the others). */
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of `masters` redis-server processes on free loopback ports (no replicas, no
 * persistence), joined with `redis-cli --cluster create`, returned once every node reports
 * cluster_state:ok. Each node's cluster bus gets its own free port (`cluster-port`): the default,
 * client port + 10000, may not exist for a high ephemeral port.
 */
export async function startRedisCluster(options: { masters?: number } = {}): Promise<RunningRedisCluster> {
  const masters = options.masters ?? 3;
  if (masters < 3) throw new Error('redis-cli --cluster create needs at least 3 masters');
  const dir = mkdtempSync(path.join(tmpdir(), 'redis-cluster-'));
  const servers: ChildProcess[] = [];
  const ports: number[] = [];
  const stop = async () => {
    await Promise.all(
      servers.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freeTcpPort();
      const busPort = await freeTcpPort();
      ports.push(port);
      // prettier-ignore
      const child = spawn(REDIS_SERVER_BIN, [
        '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
        '--cluster-port', String(busPort), '--cluster-config-file', path.join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no', '--dir', dir,
      ], { stdio: 'ignore' });
      servers.push(child);
    }
    await Promise.all(ports.map((port) => waitForPing(port)));
    await run(REDIS_CLI_BIN, [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    await Promise.all(ports.map((port) => waitForClusterOk(port)));
  } catch (error) {
    await stop();
    throw new Error(`could not start a Redis Cluster: ${(error as Error).message}`);
  }
  return { ports, url: `redis://127.0.0.1:${ports[0]}`, stop };
}

async function withNode<T>(port: number, fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

/** A node that refuses the connection is not up yet: its error means "not yet". */
const pollNode = (what: string, port: number, check: (redis: Redis) => Promise<boolean>) =>
  waitFor(what, () => withNode(port, check).catch(() => false), 20_000, 100);

const waitForPing = (port: number) =>
  pollNode(`redis-server on ${port} to answer PING`, port, async (r) => (await r.ping()) === 'PONG');

const waitForClusterOk = (port: number) =>
  pollNode(`node ${port} to report cluster_state:ok`, port, async (r) =>
    /cluster_state:ok/.test(await r.cluster('INFO')),
  );
