import { AsyncLocalStorage } from 'node:async_hooks';
import { sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase, type NodePgQueryResultHKT } from 'drizzle-orm/node-postgres';
import type { PgDatabase } from 'drizzle-orm/pg-core';
import { Pool, type PoolConfig } from 'pg';
import { InvalidWorkspaceIdError, NotInTransactionError, WorkspaceContextConflictError } from './errors';

/** What repositories query through: the ambient transaction, else the pool. */
export type DbExecutor = PgDatabase<NodePgQueryResultHKT>;

interface TransactionFrame {
  readonly tx: DbExecutor;
  /** Workspace bound to this transaction with set_config(..., true), or null. */
  readonly workspaceId: string | null;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface DatabaseOptions extends PoolConfig {
  /** Name shown in pg_stat_activity; helps operators tell the process roles apart. */
  applicationName?: string;
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

  constructor(options: DatabaseOptions) {
    const { applicationName, ...poolConfig } = options;
    this.pool = new Pool({ max: 10, application_name: applicationName, ...poolConfig });
    // An idle client losing its server (restart, failover) must not crash the process; the pool
    // discards it and the next checkout reconnects.
    this.pool.on('error', () => undefined);
    this.root = drizzle({ client: this.pool });
  }

  /** The ambient transaction's executor, or the pool outside a transaction. */
  get executor(): DbExecutor {
    return this.storage.getStore()?.tx ?? this.root;
  }

  /** The ambient transaction's executor; throws when there is none. For writes that must share it. */
  requireTransaction(what: string): DbExecutor {
    const frame = this.storage.getStore();
    if (!frame) throw new NotInTransactionError(what);
    return frame.tx;
  }

  isInTransaction(): boolean {
    return this.storage.getStore() !== undefined;
  }

  /** Workspace bound to the ambient transaction, if any. */
  currentWorkspaceId(): string | null {
    return this.storage.getStore()?.workspaceId ?? null;
  }

  /** Runs fn in a transaction; joins the ambient one when there is one (no second connection). */
  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (this.storage.getStore()) return fn();
    return this.root.transaction((tx) => this.storage.run({ tx, workspaceId: null }, fn));
  }

  /**
   * Runs fn in a transaction bound to one workspace: `app.workspace_id` is set transaction-locally
   * (set_config(..., true)), so it ends with the transaction and never reaches the next user of a
   * pooled connection. Inside an ambient transaction it joins; binding a second, different
   * workspace to one transaction is refused.
   */
  async withWorkspace<T>(workspaceId: string, fn: () => Promise<T>): Promise<T> {
    if (!UUID_RE.test(workspaceId)) throw new InvalidWorkspaceIdError();
    const frame = this.storage.getStore();
    if (frame) {
      if (frame.workspaceId === workspaceId) return fn();
      if (frame.workspaceId !== null) {
        throw new WorkspaceContextConflictError(frame.workspaceId, workspaceId);
      }
      // The outer transaction had no workspace yet: bind it for fn only, then unbind.
      await bindWorkspace(frame.tx, workspaceId);
      try {
        return await this.storage.run({ tx: frame.tx, workspaceId }, fn);
      } finally {
        await frame.tx.execute(sql`select set_config('app.workspace_id', '', true)`);
      }
    }
    return this.root.transaction(async (tx) => {
      await bindWorkspace(tx, workspaceId);
      return this.storage.run({ tx, workspaceId }, fn);
    });
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

function bindWorkspace(tx: DbExecutor, workspaceId: string) {
  return tx.execute(sql`select set_config('app.workspace_id', ${workspaceId}, true)`);
}
