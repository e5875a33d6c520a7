import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { TestDatabaseHandle } from '@listing/testing';
import { startPlatformSim, type RunningPlatformSim } from '../../../platform-sim/src/index';
import {
  DISPATCHER,
  freePort,
  killAll,
  roleEnv,
  spawnNode,
  waitUntil,
  WORKER,
  type Spawned,
} from '../outbox/processes';
import { LocalDirectoryObjectStorage } from '../../src/modules/object-storage/local-directory-object-storage';
import { registerUser, type ApiClient, type RegisteredUser } from '../support/api-client';

export interface OperationBody {
  id: string;
  status: 'pending' | 'running' | 'succeeded' | 'failed';
  error: { code: string; message: string } | null;
  [field: string]: unknown;
}

/**
 * Real api, dispatcher and worker processes on ephemeral ports against this file's test database
 * and BullMQ prefix, one object-storage directory shared by api and worker, and platform-sim
 * (in process, so its counters can be read directly) as the image source.
 */
export class MediaStack {
  sim!: RunningPlatformSim;
  api!: Spawned;
  dispatcher!: Spawned;
  worker!: Spawned;
  apiUrl = '';
  user!: RegisteredUser;
  readonly storageDir = mkdtempSync(path.join(tmpdir(), 'media-objects-'));
  private redis?: Redis;
  private readonly queues = new Map<string, Queue>();

  constructor(
    private readonly t: TestDatabaseHandle,
    private readonly mediaEnv: Record<string, string> = {},
  ) {}

  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      OBJECT_STORAGE_DIR: this.storageDir,
      MATERIAL_SOURCE_ALLOWLIST: `127.0.0.1:${this.sim.port}`,
      MATERIAL_FETCH_TIMEOUT_MS: '5000',
      PLATFORM_BASE_URL: this.sim.url,
      ...this.mediaEnv,
      ...extra,
    };
  }

  async start(): Promise<void> {
    this.sim = await startPlatformSim({ port: 0 });
    const apiPort = await freePort();
    this.api = spawnNode('api', 'dist/main.js', {
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(apiPort),
      DATABASE_URL: this.t.info.appUrl,
      REDIS_URL: this.t.info.redisUrl,
      BULLMQ_PREFIX: this.t.info.bullPrefix,
      AUTH_SCRYPT_LOG_N: '10',
      LOG_LEVEL: 'info',
      ...this.env(),
    });
    await this.api.waitForOutput(/api listening/);
    this.apiUrl = `http://127.0.0.1:${apiPort}`;
    const role = roleEnv(this.t, { OUTBOX_TEST_JOBS: '0', ...this.env() });
    this.worker = spawnNode('worker', WORKER, role);
    await this.worker.waitForOutput(/worker ready/);
    this.dispatcher = spawnNode('dispatcher', DISPATCHER, role);
    this.redis = new Redis(this.t.info.redisUrl, { maxRetriesPerRequest: null });
    this.user = await registerUser(this.apiUrl);
  }

  get client(): ApiClient {
    return this.user.client;
  }

  ws(rest: string): string {
    return `/v1/workspaces/${this.user.workspaceId}${rest}`;
  }

  async waitForOperation(operationId: string, status: OperationBody['status'] = 'succeeded') {
    return waitUntil(
      `operation ${operationId} to be ${status}`,
      async () => {
        const res = await this.client.get<OperationBody>(this.ws(`/operations/${operationId}`));
        if (res.status !== 200) throw new Error(`GET operation → ${res.status} ${res.text}`);
        if (res.body.status === status) return res.body;
        if (res.body.status === 'succeeded' || res.body.status === 'failed') {
          throw new Error(
            `operation ${operationId} ended ${res.body.status}: ${JSON.stringify(res.body.error)}`,
          );
        }
        return undefined;
      },
      30_000,
      100,
    );
  }

  /** Raw bytes from the simulator (counted there as a media request). */
  async simBytes(name: string): Promise<Buffer> {
    const res = await fetch(`${this.sim.url}/platform/v1/media/${name}`);
    if (res.status !== 200) throw new Error(`sim media ${name} → ${res.status}`);
    return Buffer.from(await res.arrayBuffer());
  }

  queue(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.redis!, prefix: this.t.info.bullPrefix });
      this.queues.set(name, q);
    }
    return q;
  }

  async eventFor(field: string, value: string): Promise<{ id: string; queue: string; payload: unknown }> {
    const { rows } = await this.t.owner.query(
      `select id, queue, payload from outbox_events where payload->>$1 = $2`,
      [field, value],
    );
    if (rows.length !== 1) throw new Error(`expected one event with ${field}=${value}, found ${rows.length}`);
    return rows[0];
  }

  /**
   * Forces a redelivery of a processed event: waits for the first delivery, removes the completed
   * BullMQ job (so BullMQ cannot deduplicate) and puts the outbox event back to pending; the real
   * dispatcher enqueues it again. Resolves with the second job's return value.
   */
  async redeliver(eventId: string, queueName: string) {
    const queue = this.queue(queueName);
    await waitUntil('the first delivery to complete', async () => (await queue.getJob(eventId))?.finishedOn);
    await waitUntil(
      'the event to be marked dispatched',
      async () =>
        (await this.t.owner.query(`select status from outbox_events where id = $1`, [eventId])).rows[0]
          ?.status === 'dispatched',
    );
    expect(await queue.remove(eventId)).toBe(1);
    await this.t.owner.query(
      `update outbox_events set status = 'pending', next_attempt_at = now(), dispatched_at = null,
              locked_by = null, locked_until = null where id = $1`,
      [eventId],
    );
    const job = await waitUntil('the redelivered job to complete', async () => {
      const j = await queue.getJob(eventId);
      return j?.finishedOn ? j : undefined;
    });
    expect(job.failedReason).toBeFalsy();
    return job.returnvalue as { duplicate: boolean; result?: Record<string, unknown> };
  }

  /** Every stored file with its inode and mtime: a rewrite changes the inode (rename). */
  storageSnapshot(): Record<string, { ino: number; mtimeMs: number; size: number }> {
    const out: Record<string, { ino: number; mtimeMs: number; size: number }> = {};
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else {
          const s = statSync(full);
          out[path.relative(this.storageDir, full)] = { ino: s.ino, mtimeMs: s.mtimeMs, size: s.size };
        }
      }
    };
    walk(this.storageDir);
    return out;
  }

  /** The stored object's bytes (read through the storage, checksum verified), or null. */
  async readObject(key: string): Promise<Buffer | null> {
    return (await new LocalDirectoryObjectStorage(this.storageDir).get(key))?.body ?? null;
  }

  /** Process output so far (for secret scans). */
  logs(): string {
    return [this.api, this.dispatcher, this.worker].map((p) => p.output()).join('\n');
  }

  async stop(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await this.redis?.quit();
    await killAll();
    await this.sim?.close();
    rmSync(this.storageDir, { recursive: true, force: true });
  }
}

/** Width and height from a PNG's IHDR. */
export function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(
    true,
  );
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}
