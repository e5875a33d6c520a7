import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { API_DIR } from '../outbox/processes';

/**
 * The built dump (`node dist/openapi-dump.js <file>`), as `pnpm client:generate` runs it: no
 * PostgreSQL or Redis needed (the URLs in the environment point nowhere and are ignored), the
 * configuration is the defaults whatever the environment says, and every object's keys are sorted.
 */
describe('openapi-dump (dist/openapi-dump.js)', () => {
  it('writes the served document from the defaults, without PostgreSQL or Redis, keys sorted', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'openapi-dump-'));
    try {
      const file = path.join(dir, 'openapi.json');
      const run = spawnSync(process.execPath, ['dist/openapi-dump.js', file], {
        cwd: API_DIR,
        encoding: 'utf8',
        timeout: 30_000,
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
          REDIS_URL: 'redis://127.0.0.1:1',
          IDEMPOTENCY_LOCK_TIMEOUT_MS: '123',
        },
      });
      expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
      const text = readFileSync(file, 'utf8');
      const document = JSON.parse(text) as {
        openapi: string;
        paths: Record<string, unknown>;
        'x-idempotency': Record<string, unknown>;
      };
      expect(document.openapi).toBe('3.1.0');
      expect(Object.keys(document.paths)).toContain('/v1/workspaces/{workspaceId}/stores');
      expect(document['x-idempotency']).toMatchObject({ lockTimeoutMs: 5000, retryAfterSeconds: 1 });
      expect(Object.keys(document)).toEqual([...Object.keys(document)].sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
