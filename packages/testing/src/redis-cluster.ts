import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
  /** The masters' client ports on 127.0.0.1, as created. */
  readonly ports: readonly number[];
  /** A seed node's URL (clients discover the others). */
  readonly url: string;
  /** The master serving `key`'s hash slot now, and its replicas (client ports). */
  shardOf(key: string): Promise<{ master: number; replicas: number[] }>;
  /** SIGKILLs the node on `port` (nothing is persisted: what it held is gone). */
  kill(port: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** Masters (≥ 3, what `redis-cli --cluster create` needs). Default 3. */
  masters?: number;
  /** Replicas per master. Default 0. */
  replicas?: number;
  /** `cluster-node-timeout` (ms): how long a silent node takes to be failed over. Default 2000. */
  nodeTimeoutMs?: number;
}

/**
 * A Redis Cluster of `masters` redis-server processes on free loopback ports, each with
 * `replicas` replicas (no persistence), joined with `redis-cli --cluster create`, returned once
 * every node reports cluster_state:ok, sees every other node and every replica's link is up. Each
 * node's cluster bus gets its own free port (`cluster-port`): the default, client port + 10000,
 * may not exist for a high ephemeral port.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RunningRedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicas ?? 0;
  if (masters < 3) throw new Error('redis-cli --cluster create needs at least 3 masters');
  const dir = mkdtempSync(path.join(tmpdir(), 'redis-cluster-'));
  const servers = new Map<number, ChildProcess>();
  const ports: number[] = [];
  const kill = async (port: number) => {
    const child = servers.get(port);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  const stop = async () => {
    await Promise.all([...servers.keys()].map(kill));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // A port free when picked can be taken before redis-server binds it (by another test's
    // connection or server): that node exits at once and is started again on other ports. One node
    // at a time, so a pick cannot be the port of a node still starting.
    const startNode = async (): Promise<number> => {
      for (let attempt = 1; ; attempt++) {
        const port = await freeTcpPort();
        const busPort = await freeTcpPort();
        // prettier-ignore
        const child = spawn(REDIS_SERVER_BIN, [
          '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
          '--cluster-port', String(busPort), '--cluster-config-file', path.join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout', String(options.nodeTimeoutMs ?? 2000),
          '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', path.join(dir, `${port}.log`),
        ], { stdio: 'ignore' });
        servers.set(port, child);
        if (await waitForStart(port, child)) return port;
        servers.delete(port);
        if (attempt === 3) {
          const log = lastLines(path.join(dir, `${port}.log`), 3);
          throw new Error(`redis-server exited at start, 3 times; last on port ${port}: ${log}`);
        }
      }
    };
    for (let i = 0; i < masters * (1 + replicas); i++) ports.push(await startNode());
    // redis-cli makes the first `masters` nodes masters (and warns, not fails, that their
    // replicas share their host).
    await run(REDIS_CLI_BIN, [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await Promise.all(ports.map((port) => waitForClusterOk(port, ports.length)));
    await Promise.all(ports.slice(masters).map((port) => waitForReplicaLink(port)));
    await Promise.all(ports.map((port) => waitForReplicasKnown(port, replicas)));
  } catch (error) {
    await stop();
    throw new Error(`could not start a Redis Cluster: ${(error as Error).message}`);
  }
  const seed = ports[0]!;
  const shardOf = async (key: string) => {
    const alive = [...servers].find(([, child]) => child.exitCode === null && child.signalCode === null);
    if (!alive) throw new Error('every node of the cluster is down');
    return withNode(alive[0], async (redis) => {
      const slot = Number(await redis.cluster('KEYSLOT', key));
      const range = (await slotRanges(redis)).find(([start, end]) => slot >= start && slot <= end);
      if (!range) throw new Error(`no node serves slot ${slot}`);
      const [, , master, ...rest] = range;
      return { master: Number(master[1]), replicas: rest.map((node) => Number(node[1])) };
    });
  };
  return { ports: ports.slice(0, masters), url: `redis://127.0.0.1:${seed}`, shardOf, kill, stop };
}

function lastLines(file: string, n: number): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-n).join(' | ');
  } catch {
    return '(no log)';
  }
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

/**
 * True once `child` answers on `port` (its own pid in INFO: not another server that holds the
 * port), false when it exited first.
 */
async function waitForStart(port: number, child: ChildProcess): Promise<boolean> {
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  const own = new RegExp(`^process_id:${child.pid}\\b`, 'm');
  const answers = (r: Redis) => r.info('server').then((info) => own.test(info));
  await waitFor(
    `redis-server on ${port} to answer or exit`,
    async () => exited() || (await withNode(port, answers).catch(() => false)),
    20_000,
    50,
  );
  return !exited();
}

const waitForClusterOk = (port: number, nodes: number) =>
  pollNode(`node ${port} to report cluster_state:ok with ${nodes} nodes`, port, async (r) => {
    const info = (await r.cluster('INFO')) as string;
    return /cluster_state:ok/.test(info) && new RegExp(`cluster_known_nodes:${nodes}\\b`).test(info);
  });

type SlotRanges = Array<[number, number, ...Array<[host: string, port: number, ...rest: unknown[]]>]>;

/** CLUSTER SLOTS: [start, end, master as [host, port, id], ...replicas as [host, port, id]]. */
const slotRanges = async (redis: Redis) => (await redis.cluster('SLOTS')) as SlotRanges;

/** Gossip tells every node who replicates whom, a while after the replicas have synced. */
const waitForReplicasKnown = (port: number, replicas: number) =>
  pollNode(`node ${port} to list ${replicas} replica(s) per slot range`, port, async (r) =>
    (await slotRanges(r)).every((range) => range.length === 3 + replicas),
  );

/** A replica is only a failover target once it has synced with its master. */
const waitForReplicaLink = (port: number) =>
  pollNode(`replica ${port} to sync with its master`, port, async (r) =>
    /master_link_status:up/.test(await r.info('replication')),
  );
