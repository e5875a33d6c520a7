import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { aiTasks, sql, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder, type PagePosition } from '../../common/page-cursor';
import type { AiTaskKind, AiTaskStatus, AiTaskView } from './ai-task-view';

type TaskRow = Pick<
  SqlRow<typeof aiTasks>,
  | 'id'
  | 'kind'
  | 'draft_id'
  | 'base_revision'
  | 'status'
  | 'execution_id'
  | 'result_revision'
  | 'error_code'
  | 'created_by'
  | 'created_at'
  | 'completed_at'
> & {
  options: { target?: 'title' | 'description'; prompt?: string };
  result: Record<string, unknown> | null;
};

export interface AiTaskWork {
  id: string;
  kind: AiTaskKind;
  draftId: string;
  baseRevision: number;
  options: { target?: 'title' | 'description'; prompt?: string };
  status: AiTaskStatus;
  executionId: string;
  createdBy: string;
}

const COLUMNS = sql`id, kind, draft_id, base_revision, options, status, execution_id, result_revision, result, error_code,
  created_by, created_at, completed_at`;

/**
 * SQL of ai_tasks and of their feature executions (mode 'outbox'). Transitions are conditional;
 * the execution follows its task in the same statement's transaction.
 */
@Injectable()
export class AiTasksRepository {
  constructor(private readonly db: Database) {}

  async insert(task: {
    id: string;
    kind: AiTaskKind;
    draftId: string;
    baseRevision: number;
    options: Record<string, string>;
    executionId: string;
    createdBy: string;
  }): Promise<void> {
    const tx = this.db.requireTransaction('ai task insert');
    await tx.execute(sql`
      insert into feature_executions (workspace_id, id, module_code, record_id, feature_id, mode, status, base_revision, created_by)
      values (app_current_workspace(), ${task.executionId}, 'product_draft', ${task.draftId}, ${`ai-${task.kind}`}, 'outbox', 'PENDING',
              ${task.baseRevision}, ${task.createdBy})`);
    await tx.execute(sql`
      insert into ai_tasks (workspace_id, id, kind, draft_id, base_revision, options, execution_id, created_by)
      values (app_current_workspace(), ${task.id}, ${task.kind}, ${task.draftId}, ${task.baseRevision},
              ${JSON.stringify(task.options)}::jsonb, ${task.executionId}, ${task.createdBy})`);
  }

  async find(id: string): Promise<AiTaskView | undefined> {
    const row = await this.row(id);
    return row && toView(row);
  }

  /** As accepted: pending, no result, from immutable columns only. */
  async findAsAccepted(id: string): Promise<AiTaskView | undefined> {
    const view = await this.find(id);
    return (
      view && {
        ...view,
        status: 'pending',
        resultRevision: null,
        result: null,
        errorCode: null,
        completedAt: null,
      }
    );
  }

  async findWork(id: string): Promise<AiTaskWork | undefined> {
    const row = await this.row(id);
    return (
      row && {
        id: row.id,
        kind: row.kind,
        draftId: row.draft_id,
        baseRevision: row.base_revision,
        options: row.options,
        status: row.status,
        executionId: row.execution_id,
        createdBy: row.created_by,
      }
    );
  }

  async list(limit: number, after?: PagePosition): Promise<AiTaskView[]> {
    const { rows } = await this.db.executor.execute<TaskRow>(sql`
      select ${COLUMNS} from ai_tasks where workspace_id = app_current_workspace() ${afterCursor(after)}
       ${pageOrder()} limit ${limit}`);
    return rows.map(toView);
  }

  async markRunning(task: AiTaskWork): Promise<void> {
    await this.db.executor.execute(sql`
      update ai_tasks set status = 'running', updated_at = now()
       where workspace_id = app_current_workspace() and id = ${task.id} and status in ('pending', 'running')`);
    await this.db.executor.execute(sql`
      update feature_executions set status = 'RUNNING'
       where workspace_id = app_current_workspace() and id = ${task.executionId} and status in ('PENDING', 'RUNNING')`);
  }

  /** pending|running → succeeded with the result; false when the task was already finished. */
  async claimSuccess(id: string, result: Record<string, unknown>): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update ai_tasks set status = 'succeeded', result = ${JSON.stringify(result)}::jsonb, completed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')`);
    return r.rowCount === 1;
  }

  async setResultRevision(task: AiTaskWork, revision: number | null): Promise<void> {
    await this.db.executor.execute(sql`
      update ai_tasks set result_revision = ${revision}
       where workspace_id = app_current_workspace() and id = ${task.id}`);
    await this.db.executor.execute(sql`
      update feature_executions set status = 'SUCCEEDED', result_revision = ${revision}, completed_at = now()
       where workspace_id = app_current_workspace() and id = ${task.executionId} and status in ('PENDING', 'RUNNING')`);
  }

  async markFailed(task: { id: string; executionId: string }, errorCode: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update ai_tasks set status = 'failed', error_code = ${errorCode}, completed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${task.id} and status in ('pending', 'running')`);
    if (r.rowCount !== 1) return false;
    await this.db.executor.execute(sql`
      update feature_executions set status = 'FAILED', error_code = ${errorCode}, completed_at = now()
       where workspace_id = app_current_workspace() and id = ${task.executionId} and status in ('PENDING', 'RUNNING')`);
    return true;
  }

  private async row(id: string): Promise<TaskRow | undefined> {
    const { rows } = await this.db.executor.execute<TaskRow>(
      sql`select ${COLUMNS} from ai_tasks where workspace_id = app_current_workspace() and id = ${id}`,
    );
    return rows[0];
  }
}

function toView(row: TaskRow): AiTaskView {
  return {
    id: row.id,
    kind: row.kind,
    draftId: row.draft_id,
    baseRevision: row.base_revision,
    target: row.kind === 'text' ? (row.options.target ?? 'description') : null,
    status: row.status,
    executionId: row.execution_id,
    resultRevision: row.result_revision,
    result: row.result,
    errorCode: row.error_code,
    createdAt: new Date(row.created_at).toISOString(),
    completedAt: row.completed_at ? new Date(row.completed_at).toISOString() : null,
  };
}
