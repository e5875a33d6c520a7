import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { CuttableProxy, freeTcpPort, seedWorkspace, useTestDatabase } from '@listing/testing';
import { DISPATCHER, WORKER, createTestTables, killAll, roleEnv, spawnNode, waitUntil } from './processes';

const t = useTestDatabase();
jest.setTimeout(120_000);

/** A private redis-server without persistence: what a kill -9 takes is gone. */
function startRedis(port: number, extra: string[] = []): ChildProcess {
  const dir = mkdtempSync(path.join(tmpdir(), 'outbox-failover-'));
  return spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      ...extra,
    ],
    { stdio: 'ignore' },
  );
}

const clients: Redis[] = [];
/** A client of one server; disconnected after the file (a killed server must not keep jest alive). */
const redisAt = (port: number) => {
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  clients.push(client);
  return client;
};

/**
 * Redis failover: a primary with a replica behind a "virtual IP" (a proxy the roles connect to).
 * The replica stops receiving the replication stream (its link is cut), more events are
 * dispatched into the primary alone, then the primary is killed with -9, the replica promoted and
 * the address moved to it. The jobs the old primary took with it are delivered again by the
 * dispatcher's lost-job recovery; every event's effect happens exactly once.
 */
describe('Redis failover: the primary killed, its replica promoted', () => {
  const servers: ChildProcess[] = [];
  const proxies: CuttableProxy[] = [];
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await killAll();
    for (const p of proxies) await p.cut();
    for (const s of servers) s.kill('SIGKILL');
  });

  it('loses no event: what the promoted replica never saw is re-delivered, each effect once', async () => {
    const [primaryPort, replicaPort] = [await freeTcpPort(), await freeTcpPort()];
    const primary = startRedis(primaryPort);
    servers.push(primary);
    // The replica follows the primary through a link the test can cut.
    const link = new CuttableProxy(await freeTcpPort(), { host: '127.0.0.1', port: primaryPort });
    const vip = new CuttableProxy(await freeTcpPort(), { host: '127.0.0.1', port: primaryPort });
    proxies.push(link, vip);
    await link.open();
    await vip.open();
    servers.push(startRedis(replicaPort, ['--replicaof', '127.0.0.1', String(link.port)]));
    const replica = redisAt(replicaPort);
    await waitUntil('the replica to be in sync', async () =>
      /master_link_status:up/.test(await replica.info('replication').catch(() => '')),
    );

    await createTestTables(t.owner);
    const ws = (await seedWorkspace(t.owner, 'failover')).workspaceId;
    const env = roleEnv(t, {
      REDIS_URL: `redis://127.0.0.1:${vip.port}`,
      OUTBOX_REDIS_RETRY_MS: '200',
      OUTBOX_RECLAIM_INTERVAL_MS: '200',
    });
    const dispatcher = spawnNode('dispatcher', DISPATCHER, env);
    await dispatcher.waitForOutput(/lost-job sweep finished/);
    const insert = async (n: number, tag: string) =>
      (
        await t.owner.query<{ id: string }>(
          `insert into outbox_events (id, workspace_id, queue, event_type, payload)
           select gen_random_uuid(), $1, 'outbox-test', 'outbox.test-effect', jsonb_build_object('marker', $2 || g)
             from generate_series(1, $3::int) g returning id`,
          [ws, tag, n],
        )
      ).rows.map((r) => r.id);
    const dispatched = async (ids: string[]) =>
      (
        await t.owner.query(
          `select count(*)::int as n from outbox_events where id = any($1::uuid[]) and status = 'dispatched'`,
          [ids],
        )
      ).rows[0].n as number;

    // 30 events reach both servers; then the link is cut and 30 more reach the primary only.
    const replicated = await insert(30, 'replicated-');
    await waitUntil('30 dispatched', async () => (await dispatched(replicated)) === 30);
    const onReplica = new Queue('outbox-test', {
      connection: redisAt(replicaPort),
      prefix: t.info.bullPrefix,
    });
    await waitUntil(
      'the replica to hold the first 30 jobs',
      async () => (await onReplica.getWaitingCount()) === 30,
    );
    await link.cut();
    const unreplicated = await insert(30, 'unreplicated-');
    await waitUntil('30 more dispatched', async () => (await dispatched(unreplicated)) === 30);
    expect(await onReplica.getWaitingCount()).toBe(30); // the replica never saw them

    // Failover: the primary dies, the replica is promoted, the address moves to it.
    primary.kill('SIGKILL');
    await replica.replicaof('NO', 'ONE');
    await vip.retarget({ host: '127.0.0.1', port: replicaPort });
    await dispatcher.waitForOutput(/"requeued":30[^\n]*lost-job sweep finished/, 30_000);

    const worker = spawnNode('worker', WORKER, env);
    await worker.waitForOutput(/worker ready/);
    const all = [...replicated, ...unreplicated];
    const effects = async () =>
      (
        await t.owner.query(
          `select count(*)::int as n, count(distinct event_id)::int as events from outbox_test_effects
            where event_id = any($1::uuid[])`,
          [all],
        )
      ).rows[0] as { n: number; events: number };
    await waitUntil('every event ran', async () => (await effects()).events === 60, 30_000, 100);
    await waitUntil(
      'BullMQ to have completed the 60',
      async () => (await onReplica.getCompletedCount()) === 60,
    );
    expect(await effects()).toEqual({ n: 60, events: 60 });
    const { rows } = await t.owner.query(
      `select count(*)::int as n, max(attempt_count) as attempts from outbox_events
        where id = any($1::uuid[]) and status = 'dispatched'`,
      [all],
    );
    expect(rows[0]).toEqual({ n: 60, attempts: 0 });
    await onReplica.close();
    expect(await dispatcher.stop()).toEqual({ code: 0, signal: null });
    expect(await worker.stop()).toEqual({ code: 0, signal: null });
  });
});
