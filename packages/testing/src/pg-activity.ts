import { Client } from 'pg';
import type { TestDatabase } from './test-database';

export interface IdleTransaction {
  readonly applicationName: string;
  readonly idleMs: number;
  readonly query: string;
}

/**
 * Sessions of the test database sitting idle inside a transaction for at least `minIdleMs`:
 * a transaction held open across a remote call shows up here. Read as the superuser: to any other
 * role, pg_stat_activity hides the state of other roles' sessions, so the app's would never match.
 * A short transaction caught between two of its statements is idle for microseconds; pick
 * `minIdleMs` well above that.
 */
export async function idleTransactions(info: TestDatabase, minIdleMs: number): Promise<IdleTransaction[]> {
  const admin = new Client({ connectionString: info.adminUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ application_name: string; idle_ms: number; query: string }>(
      `select application_name, extract(epoch from now() - state_change) * 1000 as idle_ms, query
         from pg_stat_activity
        where datname = $1 and state like 'idle in transaction%'
          and now() - state_change >= $2 * interval '1 millisecond'`,
      [info.name, minIdleMs],
    );
    return rows.map((r) => ({
      applicationName: r.application_name,
      idleMs: Number(r.idle_ms),
      query: r.query,
    }));
  } finally {
    await admin.end();
  }
}

/**
 * The text of every query any pg client of this process sends while fn runs (one entry per
 * message: a multi-statement simple query is one), in order. For tests that count round trips.
 */
export async function sentQueries<T>(fn: () => Promise<T>): Promise<{ result: T; queries: string[] }> {
  const queries: string[] = [];
  const original = Client.prototype.query;
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    const q = args[0] as string | { text?: string };
    queries.push(typeof q === 'string' ? q : (q.text ?? ''));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    return { result: await fn(), queries };
  } finally {
    Client.prototype.query = original;
  }
}
