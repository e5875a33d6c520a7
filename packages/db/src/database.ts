import { AsyncLocalStorage } from 'node:async_hooks';
import { sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase, type NodePgQueryResultHKT } from 'drizzle-orm/node-postgres';
import type { PgDatabase } from 'drizzle-orm/pg-core';
import { Pool, type PoolClient, type PoolConfig } from 'pg';
import {
  AmbientTransactionError,
  InvalidWorkspaceIdError,
  NotInTransactionError,
  TransactionAbortedError,
  TransactionClosedError,
  WorkspaceContextConflictError,
} from './errors';
import type { SqlText } from './sql-text';

/** What repositories query through: the ambient transaction, else the pool. */
export type DbExecutor = PgDatabase<NodePgQueryResultHKT>;

interface TransactionFrame {
  readonly tx: DbExecutor;
  /** Workspace bound to this transaction with set_config(..., true), or null. */
  readonly workspaceId: string | null;
  /** Callbacks to run once the transaction has committed (shared by nested frames). */
  readonly afterCommit: Array<() => void>;
  /** Statements sent in the same round trip as COMMIT (shared by nested frames). */
  readonly atCommit: string[];
  /** Workspace still bound when COMMIT runs: the one bound at BEGIN (a nested binding ends before). */
  readonly boundAtCommit: string | null;
  /** The pooled connection the transaction runs on. */
  readonly client: PoolClient;
  /** Shared by nested frames; set once the transaction ended and its connection went back. */
  readonly state: { ended: boolean };
}

export interface TransactionOptions {
  /**
   * `SET LOCAL lock_timeout` for the whole transaction, in ms: bounds how long any statement
   * waits for a row or index lock. Only applied when this call opens the transaction.
   */
  lockTimeoutMs?: number;
  /**
   * false: `SET LOCAL synchronous_commit = off`: COMMIT returns before the WAL reaches disk. Only
   * for writes whose loss in a server crash is harmless (the outbox dispatcher's lease and mark
   * updates: a lost one means an event is delivered again, which at-least-once already allows).
   * Never for business transactions.
   */
  synchronousCommit?: false;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface DatabaseOptions extends PoolConfig {
  /** Name shown in pg_stat_activity; helps operators tell the process roles apart. */
  applicationName?: string;
  /**
   * false: `prepared()` sends its statements unnamed (parsed on every call), for a pooler in
   * transaction mode that hands each transaction another server connection and cannot keep
   * named prepared statements (PgBouncer < 1.21). Default true.
   */
  preparedStatements?: boolean;
}

/**
 * The transaction-aware database provider.
 *
 * The transaction lives in AsyncLocalStorage, scoped by run(); it is never stored in a field and
 * never passed as an argument. Repositories call `executor` and get the ambient transaction when
 * there is one. A nested transaction() joins the outer one (same connection, same txid).
 *
 * Hand-written rather than nestjs-cls/transactional: the same provider serves the Nest API, the
 * dispatcher, the worker and the CLI (no Nest module there), and withWorkspace() must bind
 * `app.workspace_id` as the first statement of the transaction, which the adapter does not offer.
 */
export class Database {
  readonly pool: Pool;
  private readonly root: NodePgDatabase;
  private readonly storage = new AsyncLocalStorage<TransactionFrame>();
  private readonly namedStatements: boolean;

  constructor(options: DatabaseOptions) {
    const { applicationName, preparedStatements = true, ...poolConfig } = options;
    this.namedStatements = preparedStatements;
    // A checkout waits at most 10 s for a free connection: an exhausted pool answers "database
    // unavailable" (503, retryable; a worker's job goes back without an attempt), never a hang.
    this.pool = new Pool({
      max: 10,
      connectionTimeoutMillis: 10_000,
      application_name: applicationName,
      ...poolConfig,
    });
    // An idle client losing its server (restart, failover) must not crash the process; the pool
    // discards it and the next checkout reconnects.
    this.pool.on('error', () => undefined);
    // pg-pool listens for a client's errors only while it is idle in the pool. A checked-out
    // client whose connection drops between two queries of a transaction would emit 'error' with
    // no listener and crash the process; with this one the next query fails instead (a
    // connection error, see isDatabaseUnavailable) and the rollback path discards the client.
    this.pool.on('connect', (client) => client.on('error', () => undefined));
    this.root = drizzle({ client: this.pool });
  }

  /**
   * The ambient frame. A frame whose transaction has ended is refused: its connection may already
   * serve someone else's transaction (another workspace's, even).
   */
  private frame(): TransactionFrame | undefined {
    const frame = this.storage.getStore();
    if (frame?.state.ended) throw new TransactionClosedError();
    return frame;
  }

  /** The ambient transaction's executor, or the pool outside a transaction. */
  get executor(): DbExecutor {
    return this.frame()?.tx ?? this.root;
  }

  /** The ambient transaction's executor; throws when there is none. For writes that must share it. */
  requireTransaction(what: string): DbExecutor {
    const frame = this.frame();
    if (!frame) throw new NotInTransactionError(what);
    return frame.tx;
  }

  isInTransaction(): boolean {
    return this.frame() !== undefined;
  }

  /** Workspace bound to the ambient transaction, if any. */
  currentWorkspaceId(): string | null {
    return this.frame()?.workspaceId ?? null;
  }

  /** Runs fn in a transaction; joins the ambient one when there is one (no second connection). */
  async transaction<T>(fn: () => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    if (this.frame()) return fn();
    return this.runTransaction(null, options, fn);
  }

  /**
   * Runs fn in a transaction bound to one workspace: `app.workspace_id` is set transaction-locally
   * (set_config(..., true)), so it ends with the transaction and never reaches the next user of a
   * pooled connection. Inside an ambient transaction it joins; binding a second, different
   * workspace to one transaction is refused.
   */
  async withWorkspace<T>(
    workspaceId: string,
    fn: () => Promise<T>,
    options: TransactionOptions = {},
  ): Promise<T> {
    if (!UUID_RE.test(workspaceId)) throw new InvalidWorkspaceIdError();
    const frame = this.frame();
    if (!frame) return this.runTransaction(workspaceId.toLowerCase(), options, fn);
    if (frame.workspaceId === workspaceId.toLowerCase()) return fn();
    if (frame.workspaceId !== null) {
      throw new WorkspaceContextConflictError(frame.workspaceId, workspaceId);
    }
    // The outer transaction had no workspace yet: bind it for fn only, then unbind.
    await frame.tx.execute(sql`select set_config('app.workspace_id', ${workspaceId}, true)`);
    let failed = false;
    try {
      return await this.storage.run({ ...frame, workspaceId: workspaceId.toLowerCase() }, fn);
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      try {
        await frame.tx.execute(sql`select set_config('app.workspace_id', '', true)`);
      } catch (resetError) {
        // After a failed statement the transaction is aborted and the reset fails too (25P02);
        // the caller must see the first error, not that one.
        // eslint-disable-next-line no-unsafe-finally
        if (!failed) throw resetError;
      }
    }
  }

  /**
   * Registers a callback for after the ambient transaction commits (never on rollback); outside a
   * transaction it runs at once. For signals that must not sit inside the transaction, such as
   * waking the outbox dispatcher. Callbacks must not throw; errors are swallowed.
   */
  afterCommit(callback: () => void): void {
    const frame = this.frame();
    if (frame) frame.afterCommit.push(callback);
    else safely(callback);
  }

  /**
   * A named prepared statement on the ambient transaction's connection (else the pool): parsed
   * and planned once per connection instead of on every call. For the few hottest statements,
   * written in plain SQL with $n parameters; everything else goes through `executor`. Unnamed
   * (the same text, parsed each time) when the options say the pooler cannot keep them.
   */
  async prepared<R extends Record<string, unknown>>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<R[]> {
    const frame = this.frame();
    const query = this.namedStatements ? { name, text, values } : { text, values };
    const result = await (frame ? frame.client : this.pool).query<R>(query);
    return result.rows;
  }

  /**
   * Statements each bound to a workspace, all in one transaction of their own and one round
   * trip: every binding (`set_config('app.workspace_id', ..., true)`, which a later binding in
   * the same transaction replaces) travels with its statement in one simple-protocol message,
   * which PostgreSQL runs as a single implicit transaction (all or nothing). For the hottest
   * loop, the outbox dispatcher's claims and marks, where BEGIN, statement and COMMIT per
   * workspace would each wait for the last. The simple protocol has no parameters: statements
   * are SqlText (the `sqlText` tag and value helpers of ./sql-text), never a plain string. Never
   * joins an ambient transaction: calling it inside one is refused. Returns the rows of each
   * statement, in order.
   */
  async queryInWorkspaces<R extends Record<string, unknown>>(
    parts: ReadonlyArray<{ workspaceId: string; statement: SqlText }>,
    options: Pick<TransactionOptions, 'synchronousCommit'> = {},
  ): Promise<R[][]> {
    if (this.frame()) throw new AmbientTransactionError('queryInWorkspaces');
    if (!parts.length) return [];
    const text = parts.map(({ workspaceId, statement }, i) => {
      if (!UUID_RE.test(workspaceId)) throw new InvalidWorkspaceIdError();
      let bind = `SELECT set_config('app.workspace_id', '${workspaceId.toLowerCase()}', true)`;
      if (i === 0 && options.synchronousCommit === false)
        bind += `, set_config('synchronous_commit', 'off', true)`;
      return `${bind};\n${statement}`;
    });
    const results = (await this.pool.query(text.join(';\n'))) as unknown as Array<{ rows: R[] }>;
    // Two results per part (binding, statement); keep the statements'.
    return parts.map((_, i) => results[2 * i + 1]!.rows);
  }

  /**
   * Queues a statement to run in the same round trip as COMMIT, for a final write nothing else in
   * the transaction reads (e.g. marking an idempotency record succeeded). It travels over the
   * simple protocol, so it is SqlText (see queryInWorkspaces). If it fails, the transaction rolls
   * back and the error is thrown.
   */
  executeAtCommit(statement: SqlText): void {
    const frame = this.frame();
    if (!frame) throw new NotInTransactionError('executeAtCommit');
    frame.atCommit.push(statement);
  }

  /**
   * executeAtCommit for a statement that needs `workspaceId` bound (row-level security): queued
   * only when that workspace stays bound until COMMIT, i.e. it was bound when the transaction
   * began. Returns false, queuing nothing, otherwise (a binding nested in an unbound transaction
   * ends before COMMIT): the caller then runs the statement now (`executor.execute(sql.raw(text))`).
   */
  tryExecuteAtCommitInWorkspace(workspaceId: string, statement: SqlText): boolean {
    const frame = this.frame();
    if (!frame) throw new NotInTransactionError('executeAtCommit');
    if (frame.boundAtCommit === null || frame.boundAtCommit !== workspaceId.toLowerCase()) return false;
    frame.atCommit.push(statement);
    return true;
  }

  /**
   * Opens a transaction on one pooled connection. BEGIN, the workspace binding and the lock
   * timeout travel in one round trip (a simple-protocol multi-statement; the values are
   * validated above, never user text). Drizzle runs on the checked-out client.
   */
  private async runTransaction<T>(
    workspaceId: string | null,
    options: TransactionOptions,
    fn: () => Promise<T>,
  ): Promise<T> {
    const client: PoolClient = await this.pool.connect();
    let begin = 'BEGIN';
    if (workspaceId) begin += `; SELECT set_config('app.workspace_id', '${workspaceId}', true)`;
    if (options.synchronousCommit === false) begin += '; SET LOCAL synchronous_commit = off';
    if (options.lockTimeoutMs !== undefined) {
      begin += `; SET LOCAL lock_timeout = ${Math.max(1, Math.floor(options.lockTimeoutMs))}`;
    }
    const frame: TransactionFrame = {
      tx: drizzle({ client }),
      workspaceId,
      afterCommit: [],
      atCommit: [],
      boundAtCommit: workspaceId,
      client,
      state: { ended: false },
    };
    let broken: Error | undefined;
    try {
      await client.query(begin);
      const result = await this.storage.run(frame, fn);
      const results: unknown = await client.query([...frame.atCommit, 'COMMIT'].join(';\n'));
      const commit = Array.isArray(results) ? results[results.length - 1] : results;
      // A statement failed inside and fn swallowed the error: PostgreSQL answers COMMIT with
      // ROLLBACK. Never report that as success.
      if ((commit as { command?: string }).command === 'ROLLBACK') throw new TransactionAbortedError();
      for (const callback of frame.afterCommit) safely(callback);
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError; // the connection is unusable: destroy it, not return it
      });
      throw error;
    } finally {
      frame.state.ended = true;
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

function safely(callback: () => void) {
  try {
    callback();
  } catch {
    // after-commit callbacks are best-effort signals
  }
}
