import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectRedis } from '@listing/outbox';
import type { TestDatabaseHandle } from '@listing/testing';
import { startPlatformSim, type RunningPlatformSim } from '@listing/platform-sim';
import { DISPATCHER, killAll, roleEnv, spawnNode, WORKER, type Spawned } from '../outbox/processes';
import { LocalDirectoryObjectStorage } from '../../src/modules/object-storage/local-directory-object-storage';
import { registerUser } from '../support/api-client';
import { spawnApiProcess } from '../support/api-process';
import { ProcessStack, type OperationBody } from '../support/process-stack';

export type { OperationBody } from '../support/process-stack';

/**
 * Real api, dispatcher and worker processes on ephemeral ports against this file's test database
 * and BullMQ prefix, one object-storage directory shared by api and worker, and platform-sim
 * (in process, so its counters can be read directly) as the image source.
 */
export class MediaStack extends ProcessStack {
  sim!: RunningPlatformSim;
  api!: Spawned;
  dispatcher!: Spawned;
  worker!: Spawned;
  apiUrl = '';
  readonly storageDir = mkdtempSync(path.join(tmpdir(), 'media-objects-'));

  constructor(
    t: TestDatabaseHandle,
    private readonly mediaEnv: Record<string, string> = {},
  ) {
    super(t);
  }

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
    ({ proc: this.api, url: this.apiUrl } = await spawnApiProcess('api', this.t.info, this.env()));
    const role = roleEnv(this.t, { OUTBOX_TEST_JOBS: '0', ...this.env() });
    this.worker = spawnNode('worker', WORKER, role);
    await this.worker.waitForOutput(/worker ready/);
    this.dispatcher = spawnNode('dispatcher', DISPATCHER, role);
    this.redis = connectRedis(this.t.info.redis, { maxRetriesPerRequest: null });
    this.user = await registerUser(this.apiUrl);
  }

  /** A simulator store connected through the API (its connect operation finished). */
  async connectSimStore(apiKey: string): Promise<{ id: string; storeExternalId: string }> {
    const storeExternalId = `shop-${randomUUID().slice(0, 8)}`;
    const connected = await this.client.post<{ store: { id: string }; operation: OperationBody }>(
      this.ws('/stores'),
      { platform: 'sim', storeExternalId, apiKey, apiSecret: 'secret' },
      { key: randomUUID() },
    );
    if (connected.status !== 202) throw new Error(`store connect → ${connected.status}`);
    await this.waitForOperation(connected.body.operation.id);
    return { id: connected.body.store.id, storeExternalId };
  }

  /** A GET of the simulator's marketplace API under one store, as the store's API key. */
  simStoreGet(store: { storeExternalId: string }, apiKey: string, path: string): Promise<Response> {
    return fetch(`${this.sim.url}/platform/v1/stores/${store.storeExternalId}${path}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
  }

  /** Raw bytes from the simulator (counted there as a media request). */
  async simBytes(name: string): Promise<Buffer> {
    const res = await fetch(`${this.sim.url}/platform/v1/media/${name}`);
    if (res.status !== 200) throw new Error(`sim media ${name} → ${res.status}`);
    return Buffer.from(await res.arrayBuffer());
  }

  async eventFor(field: string, value: string): Promise<{ id: string; queue: string; payload: unknown }> {
    const { rows } = await this.t.owner.query(
      `select id, queue, payload from outbox_events where payload->>$1 = $2`,
      [field, value],
    );
    if (rows.length !== 1) throw new Error(`expected one event with ${field}=${value}, found ${rows.length}`);
    return rows[0];
  }

  /** `ProcessStack.redeliver`, typed as the media jobs' return value. */
  override async redeliver(eventId: string, queueName: string) {
    return (await super.redeliver(eventId, queueName)) as {
      duplicate: boolean;
      result?: Record<string, unknown>;
    };
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
    await this.closeQueues();
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
