import { execFile } from 'node:child_process';
import path from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '@listing/testing';

const SETUP = path.resolve(__dirname, '..', 'dist', 'setup-cli.js');

/** `pnpm db:setup` as a process: roles, database, migrations. */
describe('db:setup (packages/db/dist/setup-cli.js)', () => {
  let target: TestDatabase;

  beforeAll(async () => {
    target = await createTestDatabase({ empty: true });
  });
  afterAll(async () => {
    await target.drop();
  });

  const setup = (env: Record<string, string>) =>
    new Promise<{ code: number; stderr: string; stdout: string }>((resolve) => {
      execFile(
        process.execPath,
        [SETUP],
        { env: { PATH: process.env.PATH, ...env } },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
    });

  const queryAs = async (url: string, text: string) => {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      return await c.query(text).then(
        () => 'ran',
        (e: { code?: string }) => e.code,
      );
    } finally {
      await c.end();
    }
  };

  it('in production, refuses to run with a default password (it would reset an existing role to it)', async () => {
    const noPassword = new URL(target.agentUrl);
    noPassword.password = '';
    const run = await setup({
      NODE_ENV: 'production',
      ADMIN_DATABASE_URL: target.adminUrl,
      DATABASE_URL: target.appUrl,
      OUTBOX_DATABASE_URL: noPassword.toString(),
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('OUTBOX_DATABASE_URL (with a password), OWNER_DATABASE_PASSWORD');
    expect(run.stderr).not.toMatch(/needs DATABASE_URL/); // that one has a password
    expect(await queryAs(target.ownerUrl, 'select 1 from schema_migrations')).toBe('42P01'); // nothing ran
  });

  it('migrates a fresh database; the api role may not run the outbox functions, the outbox agent may', async () => {
    const run = await setup({
      ADMIN_DATABASE_URL: target.adminUrl,
      DATABASE_URL: target.appUrl,
      OUTBOX_DATABASE_URL: target.agentUrl,
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/migrations: \d+ applied/);
    const due = 'select * from outbox_due_workspaces(null, 1)';
    expect(await queryAs(target.appUrl, due)).toBe('42501');
    expect(await queryAs(target.agentUrl, due)).toBe('ran');
    // the agent works on tenant rows, never on accounts (sql/017; membership dropped after it)
    expect(await queryAs(target.agentUrl, 'select 1 from stores limit 1')).toBe('ran');
    expect(await queryAs(target.agentUrl, 'select password_hash from users limit 1')).toBe('42501');
  });
});
