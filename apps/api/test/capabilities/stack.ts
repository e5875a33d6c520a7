import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { connectRedis } from '@listing/outbox';
import { SimAdminClient } from '@listing/platform-sim';
import {
  API_DIR,
  DISPATCHER,
  freePort,
  killAll,
  roleEnv,
  spawnNode,
  WORKER,
  type Spawned,
} from '../outbox/processes';
import type { TestDatabaseHandle } from '@listing/testing';
import { ApiClient, registerUser } from '../support/api-client';
import { spawnApiProcess } from '../support/api-process';
import { ProcessStack } from '../support/process-stack';

export type { OperationBody } from '../support/process-stack';

const SIM_MAIN = path.resolve(API_DIR, '..', 'platform-sim', 'dist', 'main.js');

/**
 * The full stack as real processes on ephemeral ports: platform-sim, API, dispatcher, worker,
 * against this file's test database and BullMQ prefix. Every API response body and every line
 * the processes print is kept for the secret scans.
 */
export class CapabilityStack extends ProcessStack {
  sim!: Spawned;
  api!: Spawned;
  dispatcher!: Spawned;
  worker!: Spawned;
  simUrl = '';
  apiUrl = '';
  admin!: SimAdminClient;
  readonly clients: ApiClient[] = [];
  /** Output of processes that were stopped and replaced. */
  private readonly pastOutput: string[] = [];
  private readonly extraApis: Spawned[] = [];

  /** `redisUrl`: every process and the stack's own client use this Redis instead of the run's. */
  constructor(
    t: TestDatabaseHandle,
    private readonly options: { redisUrl?: string } = {},
  ) {
    super(t);
  }

  private get redisEnv(): Record<string, string> {
    return this.options.redisUrl ? { REDIS_URL: this.options.redisUrl, REDIS_CLUSTER: '0' } : {};
  }

  async start(): Promise<void> {
    const simPort = await freePort();
    this.sim = spawnNode('platform-sim', SIM_MAIN, {
      PORT: String(simPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    });
    await this.sim.waitForOutput(/platform-sim listening/);
    this.simUrl = `http://127.0.0.1:${simPort}`;
    this.admin = new SimAdminClient(this.simUrl);

    ({ proc: this.api, url: this.apiUrl } = await this.spawnApi('api'));
    await this.startWorker();
    this.startDispatcher();
    this.redis = connectRedis(this.options.redisUrl ? { url: this.options.redisUrl } : this.t.info.redis, {
      maxRetriesPerRequest: null,
    });
    this.user = await registerUser(this.apiUrl);
    this.clients.push(this.user.client);
  }

  /**
   * Another API process on this stack's database, Redis and marketplace, e.g. one with TEST_FAULTS
   * (its output joins the secret scans; the stack stops it).
   */
  async spawnApi(
    name: string,
    overrides: Record<string, string> = {},
  ): Promise<{ url: string; proc: Spawned }> {
    const spawned = await spawnApiProcess(name, this.t.info, {
      PLATFORM_BASE_URL: this.simUrl,
      ...this.redisEnv,
      ...overrides,
    });
    if (name !== 'api') this.extraApis.push(spawned.proc);
    return spawned;
  }

  roleEnv(extra: Record<string, string> = {}) {
    return roleEnv(this.t, {
      OUTBOX_TEST_JOBS: '0',
      PLATFORM_BASE_URL: this.simUrl,
      PLATFORM_TIMEOUT_MS: '3000',
      ...this.redisEnv,
      ...extra,
    });
  }

  async startWorker(extra: Record<string, string> = {}): Promise<void> {
    this.worker = spawnNode('worker', WORKER, this.roleEnv(extra));
    await this.worker.waitForOutput(/worker ready/);
  }

  startDispatcher(extra: Record<string, string> = {}): void {
    this.dispatcher = spawnNode('dispatcher', DISPATCHER, this.roleEnv(extra));
  }

  /**
   * Replaces the dispatcher, e.g. with OUTBOX_HANDLER_BACKOFF_MS=1 for a test that runs a job
   * through all its attempts (the backoff is fixed on each job when it is enqueued).
   */
  async restartDispatcher(extra: Record<string, string> = {}): Promise<void> {
    await this.stopDispatcher();
    this.startDispatcher(extra);
  }

  async stopDispatcher(): Promise<void> {
    await this.dispatcher.stop();
    this.pastOutput.push(this.dispatcher.output());
  }

  async stopWorker(): Promise<void> {
    await this.worker.stop();
    this.pastOutput.push(this.worker.output());
  }

  /** Creates a store with valid credentials and waits until it is active. */
  async activeStore(secrets: string[] = []): Promise<{ id: string; storeExternalId: string }> {
    const storeExternalId = `shop-${Math.random().toString(36).slice(2)}`;
    const c = credentials('store');
    secrets.push(c.apiKey, c.apiSecret);
    const res = await this.client.post<{ store: { id: string }; operation: { id: string } }>(
      this.ws('/stores'),
      { platform: 'sim', storeExternalId, ...c },
      { key: randomUUID() },
    );
    if (res.status !== 202) throw new Error(`create store → ${res.status} ${res.text}`);
    await this.waitForOperation(res.body.operation.id);
    return { id: res.body.store.id, storeExternalId };
  }

  /** A product draft at revision 1. */
  async draft(data: Record<string, unknown> = {}): Promise<{ id: string; revision: number }> {
    const res = await this.client.post<{ id: string; revision: number }>(
      this.ws('/product-drafts'),
      {
        title: `Draft ${Math.random().toString(36).slice(2)}`,
        price: { amount: '19.99', currency: 'EUR' },
        ...data,
      },
      { key: randomUUID() },
    );
    if (res.status !== 201) throw new Error(`create draft → ${res.status} ${res.text}`);
    return { id: res.body.id, revision: res.body.revision };
  }

  /** The outbox event a command wrote for a resource (owner role: bypasses RLS). */
  async eventFor(field: string, value: string): Promise<{ id: string; queue: string; status: string }> {
    const { rows } = await this.t.owner.query(
      `select id, queue, status from outbox_events where payload->>$1 = $2 order by created_at`,
      [field, value],
    );
    if (rows.length !== 1) throw new Error(`expected one event with ${field}=${value}, found ${rows.length}`);
    return rows[0];
  }

  /** Every API response body and process log line seen so far. */
  transcript(): string {
    return [
      ...this.clients.flatMap((c) => c.transcript),
      ...this.pastOutput,
      ...[this.sim, this.api, this.dispatcher, this.worker, ...this.extraApis].map((p) => p.output()),
    ].join('\n');
  }

  /** Fails when any of the values appears in the scanned tables, the logs or the API responses. */
  async assertNoSecrets(secrets: string[]): Promise<void> {
    const { rows } = await this.t.owner.query(`
      select 'outbox_events' as source, payload::text || coalesce(last_error, '') as text from outbox_events
      union all select 'idempotency_requests', coalesce(response_envelope::text, '') || operation from idempotency_requests
      union all select 'audit_events', metadata::text || action from audit_events
      union all select 'operations', coalesce(error_code, '') || coalesce(error_message, '') from operations
      union all select 'stores', row_to_json(s)::text from stores s`);
    const transcript = this.transcript();
    expect(transcript.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      const leaks = rows
        .filter((r: { text: string }) => r.text.includes(secret))
        .map((r: { source: string }) => r.source);
      expect({ secret, leaks }).toEqual({ secret, leaks: [] });
      expect({ secret, inTranscript: transcript.includes(secret) }).toEqual({ secret, inTranscript: false });
    }
  }

  async stop(): Promise<void> {
    await this.closeQueues();
    await killAll();
  }
}

/** Values that look like the credentials the marketplace accepts, unique per call. */
export function credentials(tag: string, valid = true) {
  const n = Math.random().toString(36).slice(2, 12);
  return { apiKey: `${valid ? 'valid' : 'bad'}-key-${tag}-${n}`, apiSecret: `secret-${tag}-${n}-${n}` };
}
