import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { CuttableProxy, freeTcpPort, seedWorkspace, useTestDatabase } from '@listing/testing';
import { CapabilityStack } from '../capabilities/stack';
import {
  DISPATCHER,
  WORKER,
  createTestTables,
  dispatchedCount,
  effectTotals,
  insertTestEvents,
  killAll,
  roleEnv,
  spawnNode,
  waitUntil,
} from './processes';

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

async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freeTcpPort());
  return [...ports];
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

  /**
   * A primary, a replica following it through `link` (a proxy the test can cut), and `vip`: the
   * address the roles use. `failover()` kills the primary with -9, promotes the replica and
   * moves the address to it.
   */
  async function redisPair() {
    // Four different ports: a port asked for before another is bound can come back twice, and the
    // later of the two listeners (a server, say) then never starts.
    const [primaryPort, replicaPort, linkPort, vipPort] = await distinctFreePorts(4);
    const primary = startRedis(primaryPort);
    servers.push(primary);
    const link = new CuttableProxy(linkPort, { host: '127.0.0.1', port: primaryPort });
    const vip = new CuttableProxy(vipPort, { host: '127.0.0.1', port: primaryPort });
    proxies.push(link, vip);
    await link.open();
    await vip.open();
    servers.push(startRedis(replicaPort, ['--replicaof', '127.0.0.1', String(link.port)]));
    const replica = redisAt(replicaPort);
    await waitUntil('the replica to be in sync', async () =>
      /master_link_status:up/.test(await replica.info('replication').catch(() => '')),
    );
    const failover = async () => {
      primary.kill('SIGKILL');
      await replica.replicaof('NO', 'ONE');
      await vip.retarget({ host: '127.0.0.1', port: replicaPort });
    };
    return { replicaPort, link, vip, failover };
  }

  it('loses no event: what the promoted replica never saw is re-delivered, each effect once', async () => {
    const { replicaPort, link, vip, failover } = await redisPair();

    await createTestTables(t.owner);
    const ws = (await seedWorkspace(t.owner, 'failover')).workspaceId;
    const env = roleEnv(t, {
      REDIS_URL: `redis://127.0.0.1:${vip.port}`,
      OUTBOX_REDIS_RETRY_MS: '200',
      OUTBOX_RECLAIM_INTERVAL_MS: '200',
    });
    const dispatcher = spawnNode('dispatcher', DISPATCHER, env);
    await dispatcher.waitForOutput(/lost-job sweep finished/);
    const insert = (n: number, tag: string) => insertTestEvents(t.owner, ws, n, tag);
    const dispatched = (ids: string[]) => dispatchedCount(t.owner, ids);

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
    await failover();
    await dispatcher.waitForOutput(/"requeued":30[^\n]*lost-job sweep finished/, 30_000);

    const worker = spawnNode('worker', WORKER, env);
    await worker.waitForOutput(/worker ready/);
    const all = [...replicated, ...unreplicated];
    const effects = () => effectTotals(t.owner, all);
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

  it('publications through a failover: each product is created once at the marketplace', async () => {
    const { replicaPort, link, vip, failover } = await redisPair();
    const stack = new CapabilityStack(t, { redisUrl: `redis://127.0.0.1:${vip.port}` });
    let onReplica: Queue | undefined;
    try {
      await stack.start();
      await stack.restartDispatcher({ OUTBOX_REDIS_RETRY_MS: '200', OUTBOX_RECLAIM_INTERVAL_MS: '200' });
      const store = await stack.activeStore();
      const publishMany = async (n: number) => {
        const ids: string[] = [];
        for (let i = 0; i < n; i++) {
          const draft = await stack.draft();
          const res = await stack.client.post<{ publication: { id: string } }>(
            stack.ws('/publications'),
            { draftId: draft.id, revision: draft.revision, storeId: store.id },
            { key: randomUUID() },
          );
          expect(res.status).toBe(202);
          ids.push(res.body.publication.id);
        }
        return ids;
      };
      const count = async (query: string, ids: string[]) =>
        (await t.owner.query(query, [ids])).rows[0].n as number;
      const published = (ids: string[]) =>
        count(
          `select count(*)::int as n from publications where id = any($1::uuid[]) and status = 'published'`,
          ids,
        );
      const dispatched = (ids: string[]) =>
        count(
          `select count(*)::int as n from outbox_events where payload->>'publicationId' = any($1::text[]) and status = 'dispatched'`,
          ids,
        );

      // A: published while both servers have everything.
      const a = await publishMany(4);
      await waitUntil('A published', async () => (await published(a)) === 4);
      const queueName = (await stack.eventFor('publicationId', a[0]!)).queue;
      onReplica = new Queue(queueName, { connection: redisAt(replicaPort), prefix: t.info.bullPrefix });
      await waitUntil(
        'the replica to hold A completed',
        async () => (await onReplica!.getCompletedCount()) === 4,
      );
      await link.cut();
      const { rows } = await t.owner.query(`select now() as at`);
      const cutAt = rows[0].at as Date;
      // B: published on the primary alone: the jobs' completion goes down with it.
      const b = await publishMany(4);
      await waitUntil('B published', async () => (await published(b)) === 4);
      // C: dispatched to the primary alone with no worker: the jobs go down before they run.
      await stack.stopWorker();
      const c = await publishMany(4);
      await waitUntil('C dispatched', async () => (await dispatched(c)) === 4);
      expect(await onReplica.getJobCounts('completed', 'waiting', 'active')).toEqual({
        completed: 4,
        waiting: 0,
        active: 0,
      });

      await failover();
      // Every event dispatched since the cut (B's and C's, and whatever else they wrote) is gone
      // from the promoted replica and comes back.
      const lost = (
        await t.owner.query(`select count(*)::int as n from outbox_events where created_at >= $1`, [cutAt])
      ).rows[0].n as number;
      expect(lost).toBeGreaterThanOrEqual(8);
      await stack.dispatcher.waitForOutput(
        new RegExp(`"requeued":${lost}[^\n]*lost-job sweep finished`),
        30_000,
      );
      await stack.startWorker();
      const all = [...a, ...b, ...c];
      await waitUntil('all 12 published', async () => (await published(all)) === 12, 60_000);
      await waitUntil(
        'every publication event handled again or for the first time',
        async () =>
          (await count(
            `select count(*)::int as n from outbox_inbox i join outbox_events e on e.id = i.event_id
              where e.payload->>'publicationId' = any($1::text[])`,
            all,
          )) === 12,
      );

      // At the marketplace: one create call and one product per publication, B's re-runs skipped.
      const counters = await stack.admin.counters();
      for (const id of all) {
        expect({
          id,
          calls: (await stack.admin.countersFor(`publication-${id}`)).productCreateCalls,
        }).toEqual({
          id,
          calls: 1,
        });
      }
      const { rows: products } = await t.owner.query<{ id: string; platform_product_id: string }>(
        `select id, platform_product_id from publications where id = any($1::uuid[])`,
        [all],
      );
      expect(
        Object.fromEntries(
          Object.entries(counters.productsByKey).filter(([k]) => all.includes(k.replace('publication-', ''))),
        ),
      ).toEqual(Object.fromEntries(products.map((p) => [`publication-${p.id}`, p.platform_product_id])));
    } finally {
      await onReplica?.close();
      await stack.stop();
    }
  });
});
