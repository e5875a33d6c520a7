import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase, type NodePgQueryResultHKT } from 'drizzle-orm/node-postgres';
import type { PgDatabase } from 'drizzle-orm/pg-core';
import { Client, Pool, type PoolClient, type PoolConfig, type QueryConfig } from 'pg';
import {
  AmbientTransactionError,
  InvalidWorkspaceIdError,
  NotInTransactionError,
  PreparedStatementsBehindPoolerError,
  TransactionAbortedError,
  TransactionClosedError,
  WorkspaceContextConflictError,
} from './errors';
import { PgErrorCode, pgErrorCode } from './pg-errors';
import { sharesServerConnections } from './pooler-probe';
import { sqlLiteral, sqlParam, type SqlText } from './sql-text';

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
  /** BEGIN with the binding and settings: sent with the transaction's first statement. */
  readonly begin: string;
  /**
   * Shared by nested frames. `ended`: fn settled, so the transaction is ending (COMMIT or
   * ROLLBACK is on its way) or ended and its connection went back: nothing more may be sent on it.
   * `begun`: BEGIN was sent (with the first statement, or alone), settled once it answered.
   * `nested`: a workspace bound inside the unbound transaction, while calls use it (withWorkspace).
   */
  readonly state: {
    ended: boolean;
    begun: Promise<unknown> | null;
    nested: NestedBinding | null;
  };
}

/** A workspace bound for a while inside an unbound transaction, shared by concurrent calls. */
interface NestedBinding {
  readonly workspaceId: string;
  /** Calls inside it now; the last one out unbinds. */
  users: number;
  /** The set_config statement, sent once. */
  bound: Promise<unknown> | null;
}

/**
 * Between the statements of one message: on a line of its own, so that a statement ending in a
 * `--` comment cannot comment out the separator and merge with the next statement (a COMMIT read
 * as a column alias, say).
 */
const SEPARATOR = '\n;\n';

/** A value `prepared()` can also send inlined, as an EXECUTE argument (see sqlParam). */
type Inlinable = Parameters<typeof sqlParam>[0];
const inlinable = (v: unknown): v is Inlinable =>
  v === null ||
  typeof v === 'string' ||
  typeof v === 'boolean' ||
  (typeof v === 'number' && Number.isFinite(v)) ||
  Buffer.isBuffer(v) ||
  (v instanceof Date && !Number.isNaN(v.getTime()));

const STATEMENT_NAME_RE = /^[a-z_][a-z0-9_]{0,50}$/;

export interface TransactionOptions {
  /**
   * `lock_timeout` for the whole transaction (transaction-local, as SET LOCAL), in ms: bounds how
   * long any statement waits for a row or index lock. Only applied when this call opens the
   * transaction.
   */
  lockTimeoutMs?: number;
  /**
   * false: `synchronous_commit = off` for the transaction it opens: COMMIT returns before the WAL
   * reaches disk. Only for writes whose loss in a server crash is harmless (the outbox
   * dispatcher's lease and mark updates: a lost one means an event is delivered again, which
   * at-least-once already allows). Never for business transactions.
   */
  synchronousCommit?: false;
}

/** How long the start-up probe waits for a connection: what an unreachable database delays a start by. */
const PROBE_TIMEOUT_MS = 3_000;

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
  /** Statements each connection has PREPAREd at SQL level (session state, gone with it). */
  private readonly sessionPrepared = new WeakMap<PoolClient, Set<string>>();
  /**
   * A connection's first use of an at-commit statement prepares it with a DO block (one round
   * trip), until the start-up check or a refusal finds that this role may not run one: then a
   * check and a PREPARE (two; prepareOnce).
   */
  private doBlocks = true;
  /** When (performance.now()) a connection of this pool last failed to open or dropped. */
  private connectionFailedAt = -Infinity;

  constructor(options: DatabaseOptions) {
    const { applicationName, preparedStatements = true, ...poolConfig } = options;
    this.namedStatements = preparedStatements;
    const failed = () => (this.connectionFailedAt = performance.now());
    // A checkout waits at most 10 s for a free connection: an exhausted pool answers "database
    // unavailable" (503, retryable; a worker's job goes back without an attempt), never a hang.
    this.pool = new Pool({
      max: 10,
      connectionTimeoutMillis: 10_000,
      application_name: applicationName,
      ...poolConfig,
      Client: connectFailureReporting(failed),
    });
    // An idle client losing its server (restart, failover) must not crash the process; the pool
    // discards it and the next checkout reconnects.
    this.pool.on('error', failed);
    // pg-pool listens for a client's errors only while it is idle in the pool. A checked-out
    // client whose connection drops between two queries of a transaction would emit 'error' with
    // no listener and crash the process; with this one the next query fails instead (a
    // connection error, see isDatabaseUnavailable) and the rollback path discards the client.
    this.pool.on('connect', (client) => client.on('error', failed));
    this.root = drizzle({ client: this.pool });
  }

  /**
   * True when a connection of this pool failed to open, or dropped, at or after `since` (a
   * performance.now() time). A worker asks it about a job whose error looks like an unreachable
   * database but whose probe, run after the error, finds the database back: the failure was ours
   * (an outage that just ended), not a provider's refused connection with the same error code.
   */
  connectionFailedSince(since: number): boolean {
    return this.connectionFailedAt >= since;
  }

  /**
   * The start-up check of `preparedStatements`: with named statements on, refuses
   * (PreparedStatementsBehindPoolerError) connections that a pooler shares between clients, where
   * the statements fail as soon as a transaction lands on a server that never parsed them. A
   * database the probe cannot reach passes: readiness reports that, and the next start checks.
   * It also finds whether this role may run a DO block (USAGE on plpgsql, which PostgreSQL grants
   * to PUBLIC and a hardened database may not); if not, first uses take the two-round-trip way.
   */
  async checkPreparedStatements(): Promise<void> {
    if (!this.namedStatements) return;
    const { connectionTimeoutMillis = PROBE_TIMEOUT_MS, ...config } = this.pool.options;
    let shared: boolean;
    try {
      shared = await sharesServerConnections({
        ...config,
        connectionTimeoutMillis: Math.min(connectionTimeoutMillis, PROBE_TIMEOUT_MS),
      });
    } catch {
      return;
    }
    if (shared) throw new PreparedStatementsBehindPoolerError();
    try {
      await this.pool.query('DO $probe$ BEGIN END $probe$');
    } catch (error) {
      if (refusesDoBlocks(error)) this.doBlocks = false;
    }
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
    // The outer transaction had no workspace yet: bind it for fn only, then unbind. One
    // connection has one binding: concurrent calls (Promise.all) share it when they name the same
    // workspace, and another workspace is refused while it lasts.
    const id = workspaceId.toLowerCase();
    const { state } = frame;
    const binding = state.nested ?? { workspaceId: id, users: 0, bound: null };
    if (binding.workspaceId !== id) throw new WorkspaceContextConflictError(binding.workspaceId, id);
    state.nested = binding;
    binding.users++;
    let failed = false;
    try {
      // Promise.resolve: a Drizzle query runs again at every then(); the binding is sent once.
      await (binding.bound ??= Promise.resolve(
        frame.tx.execute(sql`select set_config('app.workspace_id', ${id}, true)`),
      ));
      return await this.storage.run({ ...frame, workspaceId: id }, fn);
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      if (--binding.users === 0) {
        state.nested = null;
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
   * written in plain SQL with $n parameters; everything else goes through `executor`. As a
   * transaction's first statement it travels in one message with BEGIN (beginWith). Unnamed (the
   * same text, parsed each time, after BEGIN alone) when the options say the pooler cannot keep
   * them.
   */
  async prepared<R extends Record<string, unknown>>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<R[]> {
    const frame = this.frame();
    if (frame && !frame.state.begun && this.namedStatements && values.every(inlinable)) {
      // The transaction's first statement: it travels with BEGIN (beginWith).
      const opening = this.beginWith(frame, name, text, values);
      frame.state.begun = opening;
      return (await opening) as R[];
    }
    if (frame) await this.begun(frame);
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
      return `${bind}${SEPARATOR}${statement}`;
    });
    const results = (await this.pool.query(text.join(SEPARATOR))) as unknown as Array<{ rows: R[] }>;
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
   * tryExecuteAtCommitInWorkspace for a hot statement written with $n parameters, sent as
   * `EXECUTE` of a session-level prepared statement: PostgreSQL parses and plans it once per
   * connection instead of at every COMMIT. The first time a connection needs it, it is prepared
   * in a round trip of its own (prepareOnce): an error there is the statement's own (the COMMIT
   * message could not tell a failed PREPARE from a failed statement after it). A connection that
   * lost it behind our back (DEALLOCATE) fails that transaction (26000), and the next one prepares
   * it again. Unnamed (behind a transaction pooler): the values are inlined into the text
   * (sqlParam), parsed at every COMMIT.
   */
  async tryExecutePreparedAtCommitInWorkspace(
    workspaceId: string,
    name: string,
    text: string,
    values: readonly Inlinable[],
  ): Promise<boolean> {
    const frame = this.frame();
    if (!frame) throw new NotInTransactionError('executeAtCommit');
    if (frame.boundAtCommit === null || frame.boundAtCommit !== workspaceId.toLowerCase()) return false;
    if (!this.namedStatements) {
      frame.atCommit.push(text.replace(/\$(\d+)/g, (_, n: string) => sqlParam(values[Number(n) - 1]!)));
      return true;
    }
    if (!STATEMENT_NAME_RE.test(name)) throw new RangeError(`invalid statement name: ${name}`);
    const session = `s_${name}`;
    const prepared = this.sessionPreparedOn(frame.client);
    if (!prepared.has(session)) {
      try {
        await this.prepareOnce(frame, session, text);
      } catch (error) {
        // An earlier statement failed and fn swallowed the error: the same error as at COMMIT.
        if (pgErrorCode(error) === PgErrorCode.inFailedSqlTransaction) throw new TransactionAbortedError();
        throw error;
      }
      prepared.add(session);
    }
    assertOpen(frame); // else the statement would be queued for a COMMIT already sent: lost
    frame.atCommit.push(`EXECUTE ${session}${values.length ? `(${values.map(sqlParam).join(', ')})` : ''}`);
    return true;
  }

  /**
   * PREPAREs `session` as `text` on the frame's connection unless it has that statement already
   * (a session pooler's server connection may; one with another text under the name, from an
   * older deploy, is replaced). One DO block does it in one round trip. A role that may not run
   * one (checkPreparedStatements found it, or this call does) checks, then PREPAREs: when the
   * refused DO block ran before the transaction began, at once; else this transaction fails and
   * the next ones take that way.
   */
  private async prepareOnce(frame: TransactionFrame, session: string, text: string): Promise<void> {
    const statement = `PREPARE ${session} AS ${text}`;
    if (this.doBlocks) {
      try {
        await frame.client.query(prepareUnlessPresent(session, statement));
        return;
      } catch (error) {
        if (!refusesDoBlocks(error)) throw error;
        this.doBlocks = false;
        if (frame.state.begun) throw error;
      }
    }
    if (await this.holdsPrepared(frame, session, text)) return;
    assertOpen(frame);
    await frame.client.query(statement);
  }

  /**
   * Whether the frame's connection has `session` prepared as `text` (preparedAs). One of another
   * text under the name (an older deploy's, through a session pooler) is deallocated: false.
   */
  private async holdsPrepared(frame: TransactionFrame, session: string, text: string): Promise<boolean> {
    const { rows } = await frame.client.query<{ statement: string }>(PREPARED_BY_NAME, [session]);
    if (rows[0] && preparedAs(rows[0].statement, session, text)) return true;
    assertOpen(frame);
    if (rows.length) await frame.client.query(`DEALLOCATE ${session}`);
    return false;
  }

  /**
   * Opens a transaction on one pooled connection. BEGIN, the workspace binding and the lock
   * timeout travel together (a simple-protocol multi-statement; the values are validated above,
   * never user text), and not before they are needed: with the transaction's first statement
   * when it can share their message (a `prepared()` statement, or the COMMIT message of a
   * transaction that queued only statements at commit), else alone just before it. One message
   * is all or nothing: no statement ever runs outside the transaction it was written for, and a
   * transaction that sent nothing costs nothing. Drizzle runs on the checked-out client.
   */
  private async runTransaction<T>(
    workspaceId: string | null,
    options: TransactionOptions,
    fn: () => Promise<T>,
  ): Promise<T> {
    const client: PoolClient = await this.pool.connect();
    // The binding and the settings in one SELECT: one statement for PostgreSQL to parse and run.
    const settings: string[] = [];
    if (workspaceId) settings.push(`set_config('app.workspace_id', '${workspaceId}', true)`);
    if (options.synchronousCommit === false) settings.push(`set_config('synchronous_commit', 'off', true)`);
    if (options.lockTimeoutMs !== undefined) {
      const ms = Math.max(1, Math.floor(options.lockTimeoutMs));
      settings.push(`set_config('lock_timeout', '${ms}', true)`);
    }
    const begin = settings.length ? `BEGIN; SELECT ${settings.join(', ')}` : 'BEGIN';
    const state: TransactionFrame['state'] = { ended: false, begun: null, nested: null };
    const frame: TransactionFrame = {
      // Every Drizzle statement waits for BEGIN first (begun sends it when nothing has yet).
      tx: drizzle({
        client: {
          query: async (config: unknown, values?: unknown) => {
            await this.begun(frame);
            return client.query(config as QueryConfig, values as unknown[]);
          },
        } as unknown as PoolClient,
      }),
      workspaceId,
      afterCommit: [],
      atCommit: [],
      boundAtCommit: workspaceId,
      client,
      begin,
      state,
    };
    let broken: Error | undefined;
    try {
      // Once fn settles, what it left running (an un-awaited statement, a Promise.all's other
      // half) is refused (assertOpen): sent after COMMIT or ROLLBACK it would run outside the
      // transaction, or inside the connection's next user's.
      const result = await this.storage.run(frame, fn).finally(() => (state.ended = true));
      if (state.begun || frame.atCommit.length) {
        // BEGIN first, then COMMIT with what rides with it; or, when nothing was sent, all three
        // in one message.
        const opened = state.begun;
        // Marked begun either way: a COMMIT message that fails must be followed by ROLLBACK.
        state.begun = opened ?? Promise.resolve();
        if (opened) await opened;
        const message = [...(opened ? [] : [begin]), ...frame.atCommit, 'COMMIT'];
        const results: unknown = await client.query(message.join(SEPARATOR));
        const commit = Array.isArray(results) ? results[results.length - 1] : results;
        // A statement failed inside and fn swallowed the error: PostgreSQL answers COMMIT with
        // ROLLBACK. Never report that as success.
        if ((commit as { command?: string }).command === 'ROLLBACK') throw new TransactionAbortedError();
      }
      for (const callback of frame.afterCommit) safely(callback);
      return result;
    } catch (error) {
      // A prepared statement the connection no longer has: forget what it was thought to have.
      if (pgErrorCode(error) === PgErrorCode.invalidSqlStatementName) this.sessionPrepared.delete(client);
      // Nothing to roll back when nothing was sent. Otherwise ROLLBACK, also after a message that
      // failed before its BEGIN ran (a notice, no harm).
      if (state.begun) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => {
          broken = rollbackError; // the connection is unusable: destroy it, not return it
        });
      }
      throw error;
    } finally {
      state.ended = true;
      client.release(broken);
    }
  }

  /**
   * Waits for BEGIN, sending it alone, once, unless it went (or is going) with a statement; on a
   * transaction still open before and after (assertOpen).
   */
  private async begun(frame: TransactionFrame): Promise<void> {
    assertOpen(frame);
    await (frame.state.begun ??= frame.client.query(frame.begin));
    assertOpen(frame);
  }

  /**
   * BEGIN and a transaction's first statement in one message, the statement as `EXECUTE` of a
   * session-level prepared statement (PREPAREd in the same message the first time the connection
   * sees it): planned once per connection, its values inlined as escaped literals (sqlParam).
   * Returns the statement's rows. PREPARE is not transactional, so a message that failed after
   * it still leaves the statement prepared; a connection whose record is wrong heals once:
   * PREPARE of a name it has (42P05) fails before BEGIN runs and is sent again without it (or,
   * when the connection's statement has another text, after DEALLOCATE, with it), and EXECUTE of
   * a name it lacks (26000) is rolled back and sent again with it.
   */
  private async beginWith(
    frame: TransactionFrame,
    name: string,
    text: string,
    values: readonly Inlinable[],
  ): Promise<unknown[]> {
    if (!STATEMENT_NAME_RE.test(name)) throw new RangeError(`invalid statement name: ${name}`);
    const { client } = frame;
    const prepared = this.sessionPreparedOn(client);
    // Its own name: pg keeps its protocol-level statements (prepared() after BEGIN) under `name`.
    const session = `s_${name}`;
    const execute = `EXECUTE ${session}${values.length ? `(${values.map(sqlParam).join(', ')})` : ''}`;
    for (let attempt = 0; ; attempt++) {
      assertOpen(frame); // a retry, after its transaction's fn settled: send nothing more
      const prepare = !prepared.has(session);
      const message = `${prepare ? `PREPARE ${session} AS ${text}${SEPARATOR}` : ''}${frame.begin}${SEPARATOR}${execute}`;
      try {
        const results = (await client.query(message)) as unknown as Array<{ rows: unknown[] }>;
        prepared.add(session);
        return results[results.length - 1]!.rows;
      } catch (error) {
        if (frame.state.ended) throw error; // no healing on a connection on its way back
        const code = pgErrorCode(error);
        if (attempt === 0 && prepare && code === PgErrorCode.duplicatePreparedStatement) {
          if (await this.holdsPrepared(frame, session, text)) prepared.add(session);
          continue;
        }
        if (attempt === 0 && !prepare && code === PgErrorCode.invalidSqlStatementName) {
          prepared.delete(session);
          await client.query('ROLLBACK');
          continue;
        }
        if (prepare) prepared.add(session);
        throw error;
      }
    }
  }

  /** The session-level statements `client`'s connection is known to have PREPAREd. */
  private sessionPreparedOn(client: PoolClient): Set<string> {
    let prepared = this.sessionPrepared.get(client);
    if (!prepared) this.sessionPrepared.set(client, (prepared = new Set()));
    return prepared;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** The statement the connection has under a name (where DO blocks are refused, and on 42P05). */
const PREPARED_BY_NAME = 'select statement from pg_prepared_statements where name = $1';

/**
 * Whether `stored` (pg_prepared_statements.statement: the whole message that PREPAREd it) is
 * `session` prepared as `text`: sent alone (prepareOnce), or first in beginWith's message. The DO
 * block of prepareUnlessPresent compares only the first form: the other, under an at-commit name,
 * costs one PREPARE more.
 */
function preparedAs(stored: string, session: string, text: string): boolean {
  const prepare = `PREPARE ${session} AS ${text}`;
  return stored === prepare || stored.startsWith(`${prepare}${SEPARATOR}`);
}

/**
 * A DO block refused for what it is: the role lacks USAGE on plpgsql (42501), or the server does
 * not run DO blocks (0A000). Anything else is the statement's own error.
 */
function refusesDoBlocks(error: unknown): boolean {
  const code = pgErrorCode(error);
  return code === PgErrorCode.insufficientPrivilege || code === PgErrorCode.featureNotSupported;
}

/**
 * One statement that runs `prepare` (PREPARE `session` AS …) unless the connection has that
 * statement under the name, replacing another one: the check and the PREPARE in one round trip,
 * without the error (42P05) that would abort the transaction around it. `session` is a validated
 * name and `prepare` our own SQL, escaped here as a literal.
 */
function prepareUnlessPresent(session: string, prepare: string): string {
  const body =
    `DECLARE want text := ${sqlLiteral(prepare)}; had text; BEGIN ` +
    `SELECT statement INTO had FROM pg_prepared_statements WHERE name = '${session}'; ` +
    `IF had IS DISTINCT FROM want THEN ` +
    `IF had IS NOT NULL THEN EXECUTE 'DEALLOCATE ${session}'; END IF; EXECUTE want; ` +
    `END IF; END`;
  if (body.includes('$prepare$')) throw new RangeError('a statement cannot contain $prepare$');
  return `DO $prepare$ ${body} $prepare$`;
}

/** Refuses to send on a transaction whose fn has settled (see the frame's `ended`). */
function assertOpen(frame: TransactionFrame): void {
  if (frame.state.ended) throw new TransactionClosedError();
}

function safely(callback: () => void) {
  try {
    callback();
  } catch {
    // after-commit callbacks are best-effort signals
  }
}

/**
 * pg's Client, reporting a connection that could not be opened (refused, timed out, rejected by
 * the server): pg-pool emits nothing for those, only for connections that opened.
 */
function connectFailureReporting(failed: () => void): typeof Client {
  return class extends Client {
    override connect(): Promise<Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: Client) => void)): void;
    override connect(
      callback?: ((err: Error) => void) | ((err: null, c: Client) => void),
    ): Promise<Client> | void {
      if (!callback) {
        return super.connect().catch((error: unknown) => {
          failed();
          throw error;
        });
      }
      super.connect(((err: Error | null, c: Client) => {
        if (err) failed();
        (callback as (err: Error | null, c: Client) => void)(err, c);
      }) as (err: Error) => void);
    }
  };
}
