import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { useTestDatabase } from '@listing/testing';
import { killAll, roleEnv, spawnNode, WORKER } from './processes';

const t = useTestDatabase();

/** The built worker process checks its topology before it consumes anything. */
describe('worker start-up refusals (real process)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'roles-'));
  afterAll(async () => {
    await killAll();
    rmSync(dir, { recursive: true, force: true });
  });

  const rolesFile = (roles: Record<string, unknown>) => {
    const file = path.join(dir, `roles-${Object.keys(roles).join('-')}.json`);
    writeFileSync(file, JSON.stringify(roles));
    return file;
  };

  it('refuses to start when a declared queue is served by no worker role, and names it', async () => {
    const file = rolesFile({
      api: { entry: 'dist/main.js' },
      'worker-media': { entry: 'dist/worker.js', env: { OUTBOX_WORKER_QUEUES: 'media,material-transfers' } },
    });
    const worker = spawnNode('worker', WORKER, roleEnv(t, { OUTBOX_ROLES_FILE: file }));
    expect(await worker.exited).toEqual({ code: 1, signal: null });
    expect(worker.output()).toMatch(
      /queues no worker role in the roles file serves: .*publications \(publication\.publish\)/,
    );
    expect(worker.output()).not.toMatch(/worker ready/);
  });

  it('refuses a queue list naming a queue no job declares', async () => {
    const worker = spawnNode('worker', WORKER, roleEnv(t, { OUTBOX_WORKER_QUEUES: 'media,medai' }));
    expect(await worker.exited).toEqual({ code: 1, signal: null });
    expect(worker.output()).toMatch(/queues no declared job uses: medai \(named by OUTBOX_WORKER_QUEUES\)/);
  });

  it('starts with the repository roles file and a subset of queues', async () => {
    const worker = spawnNode('worker', WORKER, roleEnv(t, { OUTBOX_WORKER_QUEUES: 'media' }));
    await worker.waitForOutput(/worker ready/);
    expect(await worker.stop()).toEqual({ code: 0, signal: null });
  });
});
