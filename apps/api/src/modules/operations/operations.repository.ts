import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { operations, sql, type SqlRow } from '@listing/db';
import type { OperationView } from './operation-view';

type OperationRow = Pick<
  SqlRow<typeof operations>,
  | 'id'
  | 'kind'
  | 'status'
  | 'resource_type'
  | 'resource_id'
  | 'error_code'
  | 'error_message'
  | 'created_at'
  | 'updated_at'
  | 'completed_at'
>;

const COLUMNS = sql`id, kind, status, resource_type, resource_id, error_code, error_message, created_at, updated_at, completed_at`;

/**
 * SQL of operations. Status changes are conditional (`where status in (...)`) so a redelivered
 * job cannot move an operation backwards or finish it twice; each returns whether it applied.
 */
@Injectable()
export class OperationsRepository {
  constructor(private readonly db: Database) {}

  async create(op: {
    id: string;
    kind: string;
    resourceType: string;
    resourceId: string;
    createdBy: string | null;
  }): Promise<OperationView> {
    const { rows } = await this.db.requireTransaction('operation create').execute<OperationRow>(sql`
      insert into operations (workspace_id, id, kind, resource_type, resource_id, created_by)
      values (app_current_workspace(), ${op.id}, ${op.kind}, ${op.resourceType}, ${op.resourceId}, ${op.createdBy})
      returning ${COLUMNS}`);
    return toView(rows[0]!);
  }

  async find(id: string): Promise<OperationView | undefined> {
    const { rows } = await this.db.executor.execute<OperationRow>(
      sql`select ${COLUMNS} from operations where workspace_id = app_current_workspace() and id = ${id}`,
    );
    return rows[0] && toView(rows[0]);
  }

  /**
   * The operation exactly as the accepting request returned it (status pending), rebuilt from
   * its immutable columns: what an idempotent replay of a 202 must return, whatever happened since.
   */
  async findAsAccepted(id: string): Promise<OperationView | undefined> {
    const op = await this.find(id);
    return op && { ...op, status: 'pending', error: null, updatedAt: op.createdAt, completedAt: null };
  }

  async list(limit: number, resource?: { type: string; id: string }): Promise<OperationView[]> {
    const { rows } = await this.db.executor.execute<OperationRow>(sql`
      select ${COLUMNS} from operations
       where workspace_id = app_current_workspace()
         ${resource ? sql`and resource_type = ${resource.type} and resource_id = ${resource.id}` : sql``}
       order by created_at desc, id desc limit ${limit}`);
    return rows.map(toView);
  }

  /** pending|running → running (a retry of a crashed attempt re-enters running). */
  /** Locks the operation while it is still pending or running; false once it has ended. */
  async lockOpen(id: string): Promise<boolean> {
    const { rows } = await this.db.executor.execute(sql`
      select 1 from operations
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')
         for update`);
    return rows.length === 1;
  }

  async markRunning(id: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update operations set status = 'running', attempts = attempts + 1, started_at = coalesce(started_at, now()), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')`);
    return r.rowCount === 1;
  }

  async markSucceeded(id: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update operations set status = 'succeeded', completed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')`);
    return r.rowCount === 1;
  }

  async markFailed(id: string, error: { code: string; message: string }): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update operations set status = 'failed', error_code = ${error.code}, error_message = ${error.message},
             completed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')`);
    return r.rowCount === 1;
  }
}

function toView(row: OperationRow): OperationView {
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    error: row.error_code ? { code: row.error_code, message: row.error_message ?? '' } : null,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
    completedAt: row.completed_at ? new Date(row.completed_at).toISOString() : null,
  };
}
