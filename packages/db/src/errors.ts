/** Typed errors of the database layer. Codes are stable strings; nothing here is HTTP-aware. */
export abstract class DatabaseLayerError extends Error {
  abstract readonly code: string;
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A write that must share the caller's transaction was attempted outside one. */
export class NotInTransactionError extends DatabaseLayerError {
  readonly code = 'DB_NOT_IN_TRANSACTION';
  constructor(what: string) {
    super(`${what} must run inside a transaction (Database.transaction / withWorkspace)`);
  }
}

/** A statement that must run in a transaction of its own was called inside an ambient one. */
export class AmbientTransactionError extends DatabaseLayerError {
  readonly code = 'DB_AMBIENT_TRANSACTION';
  constructor(what: string) {
    super(`${what} runs in a transaction of its own and cannot join the ambient one`);
  }
}

/**
 * A statement failed inside and the error was swallowed: COMMIT was answered with ROLLBACK, or a
 * hot statement's first use on the connection (tryExecutePreparedAtCommitInWorkspace) found the
 * transaction aborted.
 */
export class TransactionAbortedError extends DatabaseLayerError {
  readonly code = 'DB_TRANSACTION_ABORTED';
  constructor() {
    super('the transaction was aborted by an earlier failed statement and has been rolled back');
  }
}

/**
 * Work that outlived its transaction (an un-awaited promise started inside it) tried to use it:
 * its connection is back in the pool, perhaps inside another request's transaction.
 */
export class TransactionClosedError extends DatabaseLayerError {
  readonly code = 'DB_TRANSACTION_CLOSED';
  constructor() {
    super('the transaction has ended; work started inside it must be awaited before it ends');
  }
}

/** withWorkspace(B) was called inside a transaction already bound to workspace A. */
export class WorkspaceContextConflictError extends DatabaseLayerError {
  readonly code = 'DB_WORKSPACE_CONTEXT_CONFLICT';
  constructor(current: string, requested: string) {
    super(`transaction is bound to workspace ${current}; cannot switch to ${requested}`);
  }
}

/**
 * Named prepared statements are on, but the connections go through a pooler that shares server
 * connections between clients (sharesServerConnections): the next transaction may land on a
 * server that never parsed them, and every statement that relies on one fails there.
 */
export class PreparedStatementsBehindPoolerError extends DatabaseLayerError {
  readonly code = 'DB_PREPARED_STATEMENTS_BEHIND_POOLER';
  constructor() {
    super(
      'named prepared statements are on, but the database connection goes through a pooler that ' +
        'shares server connections between clients (transaction or statement mode), which loses them',
    );
  }
}

export class InvalidWorkspaceIdError extends DatabaseLayerError {
  readonly code = 'DB_INVALID_WORKSPACE_ID';
  constructor() {
    super('workspace id must be a UUID');
  }
}

export class MigrationChecksumMismatchError extends DatabaseLayerError {
  readonly code = 'MIGRATION_CHECKSUM_MISMATCH';
  constructor(
    readonly file: string,
    readonly applied: string,
    readonly current: string,
  ) {
    super(
      `migration ${file} was already applied with checksum ${applied}, but the file now hashes to ` +
        `${current}. Applied migrations are immutable: revert the edit and add a new numbered file.`,
    );
  }
}

export class MigrationFileError extends DatabaseLayerError {
  readonly code = 'MIGRATION_FILE_INVALID';
}

export class MigrationFailedError extends DatabaseLayerError {
  readonly code = 'MIGRATION_FAILED';
  constructor(
    readonly file: string,
    override readonly cause: unknown,
  ) {
    super(`migration ${file} failed and was rolled back: ${(cause as Error)?.message ?? cause}`);
  }
}
