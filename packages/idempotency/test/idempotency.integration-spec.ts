import { randomUUID } from 'node:crypto';
import { sql } from '@listing/db';
import type { Database } from '@listing/db';
import {
  FingerprintKeyring,
  IdempotencyKeyRequiredError,
  IdempotencyKeyReusedError,
  IdempotencyReplayUnavailableError,
  IdempotencyRequestInProgressError,
  IdempotencyScopeConflictError,
  IdempotencyService,
  idempotencyOptions,
  type IdempotencyOptions,
  type IdempotencyResultPolicy,
  type RunPreparedInput,
} from '@listing/idempotency';
import { Client } from 'pg';
import { seedWorkspace, sentQueries, useTestDatabase } from '@listing/testing';

const t = useTestDatabase({ poolSize: 20 });
const ring = new FingerprintKeyring('k1', { k1: 'secret-number-one-0123' });

interface Widget {
  id: string;
  name: string;
  txid: string;
}

/** Restores a widget from its row: the test's stand-in for an immutable revision. */
const widgetPolicy = (db: () => Database, name = 'widget-reference-v1'): IdempotencyResultPolicy<Widget> => ({
  name,
  serialize: (w) => ({ id: w.id }),
  async restore(stored) {
    const { id } = stored as { id: string };
    const { rows } = await db().executor.execute<{
      id: string;
      name: string;
      txid: string;
      assigned: string | null;
    }>(
      sql`select id, name, txid, txid_current_if_assigned()::text as assigned from widgets where id = ${id}`,
    );
    restoredInTransactionWithXid.push(rows[0]!.assigned);
    return { id: rows[0]!.id, name: rows[0]!.name, txid: rows[0]!.txid };
  },
});
const restoredInTransactionWithXid: Array<string | null> = [];

const newService = (overrides: Partial<IdempotencyOptions> = {}, keyring = ring) => ({
  service: new IdempotencyService(t.db, idempotencyOptions({ lockTimeoutMs: 2000, ...overrides })),
  keyring,
});

describe('IdempotencyService.runPrepared against PostgreSQL', () => {
  let owner: { workspaceId: string; userId: string };
  let calls: { prepare: number; work: number };

  beforeAll(async () => {
    await t.owner.query(`
      create table widgets (workspace_id uuid not null, id uuid primary key, name text not null, txid text not null);
      alter table widgets enable row level security;
      alter table widgets force row level security;
      create policy ws on widgets using (workspace_id = app_current_workspace()) with check (workspace_id = app_current_workspace());`);
    owner = await seedWorkspace(t.owner);
  });
  beforeEach(() => {
    calls = { prepare: 0, work: 0 };
  });

  /** A keyed request that inserts one widget. `during` runs inside work, after the insert. */
  const input = (
    key: string | null,
    name: string,
    opts: {
      operation?: string;
      keyring?: FingerprintKeyring;
      during?: () => Promise<void>;
      policyName?: string;
      who?: typeof owner;
    } = {},
  ): RunPreparedInput<string, Widget> => {
    const operation = opts.operation ?? 'POST /widgets';
    const who = opts.who ?? owner;
    return {
      owner: who,
      key,
      operation,
      fingerprint: (opts.keyring ?? ring).fingerprint(operation, { name }),
      policy: widgetPolicy(() => t.db, opts.policyName),
      status: 201,
      prepare: async () => {
        calls.prepare++;
        return name.trim();
      },
      work: async (clean) => {
        calls.work++;
        const id = randomUUID();
        const { rows } = await t.db.executor.execute<{ txid: string }>(sql`
          insert into widgets (workspace_id, id, name, txid)
          values (${who.workspaceId}, ${id}, ${clean}, txid_current()::text) returning txid`);
        await opts.during?.();
        return { id, name: clean, txid: rows[0]!.txid };
      },
    };
  };
  const widgetCount = async (name: string) =>
    (await t.owner.query('select count(*)::int as n from widgets where name = $1', [name])).rows[0]
      .n as number;
  const keyRow = async (key: string) =>
    (
      await t.owner.query(
        'select *, xmin::text as xmin from idempotency_requests where idempotency_key = $1',
        [key],
      )
    ).rows[0];

  it('runs once, stores only the reference envelope, and the reservation shares the business txid', async () => {
    const { service } = newService();
    const key = randomUUID();
    const first = await service.runPrepared(input(key, 'alpha'));
    expect(first).toMatchObject({ status: 201, replayed: false, result: { name: 'alpha' } });
    const row = await keyRow(key);
    expect(row).toMatchObject({
      status: 'SUCCEEDED',
      response_status: 201,
      operation: 'POST /widgets',
      fingerprint_key_id: 'k1',
      response_envelope: { schemaVersion: 1, policy: 'widget-reference-v1', result: { id: first.result.id } },
    });
    // same transaction: the reservation row was written by the transaction that inserted the widget
    expect(BigInt(row.xmin)).toBe(BigInt(first.result.txid) % 2n ** 32n);
    expect(JSON.stringify(row.response_envelope)).not.toContain('alpha');
  });

  it('a replay returns the first result and touches nothing: no prepare, no work, no write', async () => {
    const { service } = newService({ replayCacheSize: 0 });
    const key = randomUUID();
    const first = await service.runPrepared(input(key, 'beta'));
    calls = { prepare: 0, work: 0 };
    restoredInTransactionWithXid.length = 0;

    const { result: replay, queries: statements } = await sentQueries(() =>
      service.runPrepared(input(key, 'beta')),
    );
    expect(replay).toEqual({ ...first, replayed: true });
    expect(calls).toEqual({ prepare: 0, work: 0 });
    // BEGIN (+ workspace binding) with the record read in the same message (its conditional
    // reservation inserts nothing when a record exists), the restore read, COMMIT; behind a
    // transaction pooler (no named statements) BEGIN goes alone, before the read.
    if (t.info.pooled) {
      expect(statements.length).toBe(4);
      expect(statements[0]).toMatch(/^BEGIN; SELECT set_config/);
    } else {
      expect(statements.length).toBe(3);
      expect(statements[0]).toMatch(/BEGIN;[\s\S]*EXECUTE s_idempotency_find_or_reserve\(/);
    }
    expect(statements.filter((s) => /^\s*(update|delete)\b/i.test(s))).toEqual([]);
    // nothing was written: the transaction was never assigned a transaction id
    expect(restoredInTransactionWithXid).toEqual([null]);
    expect(await widgetCount('beta')).toBe(1);
  });

  it('the process-local replay cache answers without any statement', async () => {
    const { service } = newService();
    const key = randomUUID();
    await service.runPrepared(input(key, 'cached'));
    await service.runPrepared(input(key, 'cached')); // restores from the database, fills the cache
    const spy = jest.spyOn(Client.prototype, 'query');
    try {
      const third = await service.runPrepared(input(key, 'cached'));
      expect(third.replayed).toBe(true);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
    // the cache still enforces the scope checks
    await expect(service.runPrepared(input(key, 'other'))).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    await expect(
      service.runPrepared(input(key, 'cached', { operation: 'POST /other' })),
    ).rejects.toBeInstanceOf(IdempotencyScopeConflictError);
  });

  it("the replay cache lets go when the database's clock expires the record, whatever this process's says", async () => {
    const { service } = newService();
    const key = randomUUID();
    await service.runPrepared(input(key, 'skewed'));
    await t.owner.query(
      `update idempotency_requests set created_at = now() - interval '47 hours', expires_at = now() + interval '1 second'
        where idempotency_key = $1`,
      [key],
    );
    // This process's clock runs a minute behind the database's.
    const realNow = Date.now.bind(Date);
    const lagging = jest.spyOn(Date, 'now').mockImplementation(() => realNow() - 60_000);
    try {
      expect((await service.runPrepared(input(key, 'skewed'))).replayed).toBe(true); // fills the cache
      await new Promise((r) => setTimeout(r, 1200)); // expired, by the database's clock
      // Another process would run the key again now: so must this one, not replay from memory.
      expect((await service.runPrepared(input(key, 'skewed'))).replayed).toBe(false);
      expect(await widgetCount('skewed')).toBe(2);
    } finally {
      lagging.mockRestore();
    }
  });

  it('same key with another body → KEY_REUSED; on another operation → SCOPE_CONFLICT', async () => {
    const { service } = newService({ replayCacheSize: 0 });
    const key = randomUUID();
    await service.runPrepared(input(key, 'gamma'));
    await expect(service.runPrepared(input(key, 'delta'))).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    await expect(
      service.runPrepared(input(key, 'gamma', { operation: 'POST /elsewhere' })),
    ).rejects.toBeInstanceOf(IdempotencyScopeConflictError);
    expect(await widgetCount('delta')).toBe(0);
  });

  it('work that throws after writing rolls everything back; the same key then succeeds', async () => {
    const { service } = newService();
    const key = randomUUID();
    await expect(
      service.runPrepared(
        input(key, 'epsilon', {
          during: async () => {
            throw new Error('business failure after writes');
          },
        }),
      ),
    ).rejects.toThrow('business failure after writes');
    expect(await widgetCount('epsilon')).toBe(0);
    expect(await keyRow(key)).toBeUndefined();
    const retry = await service.runPrepared(input(key, 'epsilon'));
    expect(retry.replayed).toBe(false);
    expect(await widgetCount('epsilon')).toBe(1);
  });

  describe('concurrent duplicates (separate services = separate processes: no shared in-flight map)', () => {
    /**
     * Holds a leader inside its work: `hold` (its `during`) marks `entered`, then waits for
     * `open()`. Followers start once `entered` resolves: the key is reserved by then, whatever
     * the machine's load (a fixed sleep would let a slow leader lose the race).
     */
    const gate = () => {
      let open!: () => void;
      let enter!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      const entered = new Promise<void>((resolve) => (enter = resolve));
      const hold = () => {
        enter();
        return opened;
      };
      return { open, opened, entered, hold };
    };
    /** Resolves once some backend waits on a lock (the follower's insert on the unique index). */
    const lockWaiter = async () => {
      // Superuser: pg_stat_activity hides other roles' wait events from everyone else.
      const admin = new Client({ connectionString: t.info.adminUrl });
      await admin.connect();
      try {
        for (let i = 0; i < 200; i++) {
          const { rows } = await admin.query(
            `select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock'`,
            [t.info.name],
          );
          if (rows[0].n > 0) return;
          await new Promise((r) => setTimeout(r, 10));
        }
      } finally {
        await admin.end();
      }
      throw new Error('the follower never waited on a lock');
    };

    it('leader commits → the waiting follower replays its result', async () => {
      const a = newService().service;
      const b = newService().service;
      const key = randomUUID();
      const g = gate();
      const leader = a.runPrepared(input(key, 'zeta', { during: g.hold }));
      await g.entered;
      const follower = b.runPrepared(input(key, 'zeta'));
      await lockWaiter();
      g.open();
      const [l, f] = await Promise.all([leader, follower]);
      expect(l.replayed).toBe(false);
      expect(f).toEqual({ ...l, replayed: true });
      expect(await widgetCount('zeta')).toBe(1);
    });

    it('leader rolls back → the waiting follower executes', async () => {
      const a = newService().service;
      const b = newService().service;
      const key = randomUUID();
      const g = gate();
      const leader = a.runPrepared(
        input(key, 'eta', {
          during: async () => {
            await g.hold();
            throw new Error('leader fails');
          },
        }),
      );
      await g.entered;
      const follower = b.runPrepared(input(key, 'eta'));
      await lockWaiter();
      g.open();
      await expect(leader).rejects.toThrow('leader fails');
      const f = await follower;
      expect(f.replayed).toBe(false);
      expect(await widgetCount('eta')).toBe(1);
    });

    it('leader holding the key past the wait bound → follower gets IN_PROGRESS with a retry hint', async () => {
      const a = newService().service;
      const b = newService({ lockTimeoutMs: 300, retryAfterSeconds: 2 }).service;
      const key = randomUUID();
      const g = gate();
      const leader = a.runPrepared(input(key, 'theta', { during: g.hold }));
      await g.entered;
      const started = Date.now();
      const error = await b.runPrepared(input(key, 'theta')).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(IdempotencyRequestInProgressError);
      expect((error as IdempotencyRequestInProgressError).retryAfterSeconds).toBe(2);
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      g.open();
      await leader;
      expect(await widgetCount('theta')).toBe(1);
    });

    it('within one process, duplicates await the in-flight leader (one execution)', async () => {
      const { service } = newService();
      const key = randomUUID();
      const g = gate();
      const leader = service.runPrepared(input(key, 'iota', { during: g.hold }));
      await g.entered; // the leader is executing, its key reserved
      let settled = 0;
      const duplicates = Array.from({ length: 9 }, () =>
        service.runPrepared(input(key, 'iota')).finally(() => settled++),
      );
      await new Promise((r) => setTimeout(r, 100));
      expect(settled).toBe(0); // all nine wait while the leader runs
      g.open();
      const results = await Promise.all([leader, ...duplicates]);
      expect(calls.work).toBe(1);
      expect(results[0]!.replayed).toBe(false);
      expect(results.slice(1).every((r) => r.replayed)).toBe(true);
      expect(new Set(results.map((r) => r.result.id)).size).toBe(1);
    });

    it('within one process, a duplicate waits on the in-flight leader no longer than the bound: IN_PROGRESS', async () => {
      const { service } = newService({ lockTimeoutMs: 300, retryAfterSeconds: 3 });
      const key = randomUUID();
      const g = gate();
      const leader = service.runPrepared(input(key, 'kappa-slow', { during: g.hold }));
      await g.entered;
      const started = Date.now();
      const error = await service.runPrepared(input(key, 'kappa-slow')).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(IdempotencyRequestInProgressError);
      expect((error as IdempotencyRequestInProgressError).retryAfterSeconds).toBe(3);
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      g.open();
      await leader;
      // once the leader is done, the same duplicate replays it
      expect((await service.runPrepared(input(key, 'kappa-slow'))).replayed).toBe(true);
      expect(calls.work).toBe(1);
    });

    it('inside an outer transaction the in-flight map is bypassed: an outer rollback is never shared', async () => {
      const { service } = newService();
      const key = randomUUID();
      const g = gate();
      const outer = t.db.transaction(async () => {
        await service.runPrepared(input(key, 'kappa'));
        await g.hold();
        throw new Error('outer transaction rolls back');
      });
      await g.entered;
      const standalone = service.runPrepared(input(key, 'kappa'));
      await lockWaiter(); // waits in the database, not on the outer call's promise
      g.open();
      await expect(outer).rejects.toThrow('outer transaction rolls back');
      const result = await standalone;
      expect(result.replayed).toBe(false);
      expect(await widgetCount('kappa')).toBe(1);
    });
  });

  it('inside a caller transaction with no workspace bound, the first result is recorded and replayed', async () => {
    // The workspace is bound for runPrepared only and unbound before COMMIT, where row-level
    // security would hide the reservation from an update queued for COMMIT.
    const { service } = newService({ replayCacheSize: 0 });
    const key = randomUUID();
    const first = await t.db.transaction(() => service.runPrepared(input(key, 'unbound-outer')));
    expect(first.replayed).toBe(false);
    expect(await keyRow(key)).toMatchObject({ status: 'SUCCEEDED', response_status: 201 });
    const again = await service.runPrepared(input(key, 'unbound-outer'));
    expect(again).toMatchObject({ replayed: true, result: { id: first.result.id } });
    expect(calls.work).toBe(1);
  });

  it('an expired record is deleted and the key raced for again; a replay never extends expiry', async () => {
    const { service } = newService({ replayCacheSize: 0 });
    const key = randomUUID();
    await service.runPrepared(input(key, 'lambda'));
    const before = (await keyRow(key)).expires_at.getTime();
    await new Promise((r) => setTimeout(r, 20));
    await service.runPrepared(input(key, 'lambda'));
    expect((await keyRow(key)).expires_at.getTime()).toBe(before);
    expect(before - Date.now()).toBeGreaterThan(47 * 3600 * 1000);

    await t.owner.query(
      `update idempotency_requests set created_at = now() - interval '49 hours', expires_at = now() - interval '1 hour'
        where idempotency_key = $1`,
      [key],
    );
    const again = await service.runPrepared(input(key, 'lambda'));
    expect(again.replayed).toBe(false);
    expect(await widgetCount('lambda')).toBe(2);
    expect((await keyRow(key)).expires_at.getTime()).toBeGreaterThan(Date.now() + 47 * 3600 * 1000);
  });

  it('an expired record another request holds answers in progress (409), not a lock error', async () => {
    const { service } = newService({ replayCacheSize: 0, lockTimeoutMs: 200 });
    const key = randomUUID();
    await service.runPrepared(input(key, 'expired-held'));
    await t.owner.query(
      `update idempotency_requests set created_at = now() - interval '49 hours', expires_at = now() - interval '1 hour'
        where idempotency_key = $1`,
      [key],
    );
    // The competitor: a request that is replacing the expired record and has not committed yet.
    const competitor = new Client({ connectionString: t.info.ownerUrl });
    await competitor.connect();
    try {
      await competitor.query('begin');
      await competitor.query('select 1 from idempotency_requests where idempotency_key = $1 for update', [
        key,
      ]);
      await expect(service.runPrepared(input(key, 'expired-held'))).rejects.toBeInstanceOf(
        IdempotencyRequestInProgressError,
      );
      await competitor.query('rollback');
    } finally {
      await competitor.end();
    }
    expect(await widgetCount('expired-held')).toBe(1);
    await t.owner.query('delete from idempotency_requests where idempotency_key = $1', [key]); // for the cleanup test
  });

  it('records made under a rotated-out fingerprint key still replay; an unknown key id fails closed', async () => {
    const key = randomUUID();
    await newService().service.runPrepared(input(key, 'mu'));
    const rotated = new FingerprintKeyring('k2', {
      k2: 'secret-number-two-0123',
      k1: 'secret-number-one-0123',
    });
    const replay = await newService({ replayCacheSize: 0 }).service.runPrepared(
      input(key, 'mu', { keyring: rotated }),
    );
    expect(replay.replayed).toBe(true);
    const retired = new FingerprintKeyring('k2', { k2: 'secret-number-two-0123' });
    await expect(
      newService({ replayCacheSize: 0 }).service.runPrepared(input(key, 'mu', { keyring: retired })),
    ).rejects.toBeInstanceOf(IdempotencyReplayUnavailableError);
  });

  it('a stored envelope of another result policy fails closed (no replay, no re-execution)', async () => {
    const key = randomUUID();
    await newService().service.runPrepared(input(key, 'nu'));
    await expect(
      newService({ replayCacheSize: 0 }).service.runPrepared(
        input(key, 'nu', { policyName: 'widget-reference-v2' }),
      ),
    ).rejects.toBeInstanceOf(IdempotencyReplayUnavailableError);
    expect(await widgetCount('nu')).toBe(1);
  });

  it('two users of one workspace using the same key value do not collide', async () => {
    const { service } = newService();
    const other = randomUUID();
    await t.owner.query(`insert into users (id, email, password_hash) values ($1, $2, 'x')`, [
      other,
      `${other}@example.test`,
    ]);
    await t.owner.query(
      `insert into workspace_members (workspace_id, user_id, role) values ($1, $2, 'member')`,
      [owner.workspaceId, other],
    );
    const key = randomUUID();
    const mine = await service.runPrepared(input(key, 'xi'));
    const theirs = await service.runPrepared(
      input(key, 'xi', { who: { workspaceId: owner.workspaceId, userId: other } }),
    );
    expect(theirs.replayed).toBe(false);
    expect(theirs.result.id).not.toBe(mine.result.id);
    expect(await widgetCount('xi')).toBe(2);
  });

  it('without a key it simply runs in a workspace transaction', async () => {
    const { service } = newService();
    const r = await service.runPrepared(input(null, 'omicron'));
    expect(r.replayed).toBe(false);
    await service.runPrepared(input(null, 'omicron'));
    expect(await widgetCount('omicron')).toBe(2);
  });

  it('a key error from the request is thrown before anything runs: no prepare, no work, no row', async () => {
    const { service } = newService();
    const before = (await t.owner.query('select count(*)::int as n from idempotency_requests')).rows[0].n;
    await expect(
      service.runPrepared({ ...input(null, 'keyless'), keyError: new IdempotencyKeyRequiredError() }),
    ).rejects.toBeInstanceOf(IdempotencyKeyRequiredError);
    expect(calls).toEqual({ prepare: 0, work: 0 });
    expect(await widgetCount('keyless')).toBe(0);
    expect((await t.owner.query('select count(*)::int as n from idempotency_requests')).rows[0].n).toBe(
      before,
    );
  });

  it('cleanup deletes expired records in bounded batches and keeps live ones', async () => {
    const { service } = newService();
    const keys = Array.from({ length: 5 }, () => randomUUID());
    for (const key of keys) await service.runPrepared(input(key, `batch-${key}`));
    await t.owner.query(
      `update idempotency_requests set created_at = now() - interval '49 hours', expires_at = now() - interval '1 minute'
        where idempotency_key = any($1)`,
      [keys.slice(0, 3)],
    );
    expect(await service.deleteExpired(2)).toBe(2);
    expect(await service.deleteExpired(100)).toBe(1);
    expect(await service.deleteExpired(100)).toBe(0);
    const left = await t.owner.query(
      'select count(*)::int as n from idempotency_requests where idempotency_key = any($1)',
      [keys],
    );
    expect(left.rows[0].n).toBe(2);
  });
});
