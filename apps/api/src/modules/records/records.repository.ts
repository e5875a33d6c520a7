import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { featureExecutions, recordRevisions, records, sql, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder } from '../../common/page-cursor';
import { IntegrityError } from '../../common/domain-errors';
import type {
  FeatureExecutionView,
  RecordView,
  RevisionSnapshot,
  StoredExecutionStatus,
} from './record-view';

type RevisionRow = Pick<
  SqlRow<typeof recordRevisions>,
  'workspace_id' | 'record_id' | 'revision' | 'created_by' | 'created_at'
> &
  Pick<SqlRow<typeof records>, 'module_code'> & {
    snapshot: RevisionSnapshot;
    record_created_at: SqlRow<typeof records>['created_at'];
  };

/**
 * SQL of records and record_revisions. All statements run on the ambient transaction, bound to
 * the workspace (RLS); the head and its new revision are written in one statement.
 */
@Injectable()
export class RecordsRepository {
  constructor(private readonly db: Database) {}

  async insertWithFirstRevision(snapshot: RevisionSnapshot, createdBy: string): Promise<RecordView> {
    const { rows } = await this.db.executor.execute<RevisionRow>(sql`
      with head as (
        insert into records (workspace_id, id, module_code, revision, payload, created_by)
        values (${snapshot.workspaceId}, ${snapshot.id}, ${snapshot.moduleCode}, 1, ${JSON.stringify(snapshot.payload)}::jsonb, ${createdBy})
        returning workspace_id, id, module_code, created_at
      ), revision as (
        insert into record_revisions (workspace_id, record_id, revision, snapshot, created_by)
        select head.workspace_id, head.id, 1, ${JSON.stringify(snapshot)}::jsonb, ${createdBy} from head
        returning workspace_id, record_id, revision, snapshot, created_by, created_at
      )
      select revision.*, head.module_code, head.created_at as record_created_at from revision, head`);
    return toView(verified(rows[0]!, snapshot.workspaceId, snapshot.moduleCode, snapshot.id, 1));
  }

  /** The head, locked for update: writers of one record queue here. */
  async lockHead(
    moduleCode: string,
    id: string,
  ): Promise<{ revision: number; payload: Record<string, unknown> } | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof records>, 'revision'> & { payload: Record<string, unknown> }
    >(sql`
      select revision, payload from records
       where workspace_id = app_current_workspace() and module_code = ${moduleCode} and id = ${id}
       for update`);
    return rows[0];
  }

  /** Moves the head from `snapshot.revision - 1` to `snapshot.revision` and stores the snapshot. */
  async advance(snapshot: RevisionSnapshot, createdBy: string): Promise<RecordView> {
    const { rows } = await this.db.executor.execute<RevisionRow>(sql`
      with head as (
        update records set revision = ${snapshot.revision}, payload = ${JSON.stringify(snapshot.payload)}::jsonb, updated_at = now()
         where workspace_id = ${snapshot.workspaceId} and module_code = ${snapshot.moduleCode} and id = ${snapshot.id}
           and revision = ${snapshot.revision - 1}
        returning workspace_id, id, module_code, created_at
      ), revision as (
        insert into record_revisions (workspace_id, record_id, revision, snapshot, created_by)
        select head.workspace_id, head.id, ${snapshot.revision}, ${JSON.stringify(snapshot)}::jsonb, ${createdBy} from head
        returning workspace_id, record_id, revision, snapshot, created_by, created_at
      )
      select revision.*, head.module_code, head.created_at as record_created_at from revision, head`);
    if (!rows[0]) throw new IntegrityError('the record head moved while it was locked');
    return toView(
      verified(rows[0], snapshot.workspaceId, snapshot.moduleCode, snapshot.id, snapshot.revision),
    );
  }

  /**
   * One revision, read by (workspace, module, record, revision) through its parent; the snapshot
   * must agree with its row and parent or the read fails closed.
   */
  async findRevision(moduleCode: string, id: string, revision: number): Promise<RecordView | undefined> {
    const { rows } = await this.db.executor.execute<RevisionRow>(sql`
      select v.workspace_id, v.record_id, v.revision, v.snapshot, v.created_by, v.created_at, r.module_code, r.created_at as record_created_at
        from record_revisions v
        join records r on r.workspace_id = v.workspace_id and r.id = v.record_id
       where v.workspace_id = app_current_workspace() and r.module_code = ${moduleCode}
         and v.record_id = ${id} and v.revision = ${revision}`);
    const row = rows[0];
    if (!row) return undefined;
    return toView(verified(row, row.workspace_id, moduleCode, id, revision));
  }

  async findCurrent(moduleCode: string, id: string): Promise<RecordView | undefined> {
    const { rows } = await this.db.executor.execute<RevisionRow>(sql`
      select v.workspace_id, v.record_id, v.revision, v.snapshot, v.created_by, v.created_at, r.module_code, r.created_at as record_created_at
        from records r
        join record_revisions v on v.workspace_id = r.workspace_id and v.record_id = r.id and v.revision = r.revision
       where r.workspace_id = app_current_workspace() and r.module_code = ${moduleCode} and r.id = ${id}`);
    const row = rows[0];
    if (!row) return undefined;
    return toView(verified(row, row.workspace_id, moduleCode, id, row.revision));
  }

  async listCurrent(
    moduleCode: string,
    limit: number,
    after?: { createdAt: string; id: string },
  ): Promise<RecordView[]> {
    const { rows } = await this.db.executor.execute<RevisionRow>(sql`
      select v.workspace_id, v.record_id, v.revision, v.snapshot, v.created_by, v.created_at, r.module_code, r.created_at as record_created_at
        from records r
        join record_revisions v on v.workspace_id = r.workspace_id and v.record_id = r.id and v.revision = r.revision
       where r.workspace_id = app_current_workspace() and r.module_code = ${moduleCode}
         ${afterCursor(after, sql`r.created_at`, sql`r.id`)}
       ${pageOrder(sql`r.created_at`, sql`r.id`)}
       limit ${limit}`);
    return rows.map((row) =>
      toView(verified(row, row.workspace_id, moduleCode, row.record_id, row.revision)),
    );
  }

  /**
   * A record's revisions newest first, below revision `before` when given: a range of
   * record_revisions' primary key (workspace, record, revision). Each snapshot must agree with its
   * row and parent, as findRevision's. None when the record is not one of this module's.
   */
  async listRevisions(moduleCode: string, id: string, limit: number, before?: number): Promise<RecordView[]> {
    const { rows } = await this.db.executor.execute<RevisionRow>(sql`
      select v.workspace_id, v.record_id, v.revision, v.snapshot, v.created_by, v.created_at, r.module_code, r.created_at as record_created_at
        from records r
        join record_revisions v on v.workspace_id = r.workspace_id and v.record_id = r.id
       where r.workspace_id = app_current_workspace() and r.module_code = ${moduleCode} and r.id = ${id}
         ${before === undefined ? sql`` : sql`and v.revision < ${before}`}
       order by v.revision desc
       limit ${limit}`);
    return rows.map((row) => toView(verified(row, row.workspace_id, moduleCode, id, row.revision)));
  }

  async insertExecution(e: {
    workspaceId: string;
    id: string;
    moduleCode: string;
    recordId: string;
    featureId: string;
    mode: FeatureExecutionView['mode'];
    status: StoredExecutionStatus;
    baseRevision: number;
    resultRevision: number | null;
    createdBy: string;
  }): Promise<FeatureExecutionView> {
    const { rows } = await this.db.executor.execute<ExecutionRow>(sql`
      insert into feature_executions
        (workspace_id, id, module_code, record_id, feature_id, mode, status, base_revision, result_revision, created_by,
         completed_at)
      values (${e.workspaceId}, ${e.id}, ${e.moduleCode}, ${e.recordId}, ${e.featureId}, ${e.mode}, ${e.status},
              ${e.baseRevision}, ${e.resultRevision}, ${e.createdBy}, now())
      returning id, feature_id, mode, status, base_revision, result_revision, created_at`);
    return toExecutionView(rows[0]!);
  }

  async findExecution(
    moduleCode: string,
    recordId: string,
    executionId: string,
  ): Promise<FeatureExecutionView | undefined> {
    const { rows } = await this.db.executor.execute<ExecutionRow>(sql`
      select id, feature_id, mode, status, base_revision, result_revision, created_at from feature_executions
       where workspace_id = app_current_workspace() and module_code = ${moduleCode} and record_id = ${recordId}
         and id = ${executionId}`);
    return rows[0] && toExecutionView(rows[0]);
  }
}

type ExecutionRow = Pick<
  SqlRow<typeof featureExecutions>,
  'id' | 'feature_id' | 'mode' | 'status' | 'base_revision' | 'result_revision' | 'created_at'
>;

function verified(
  row: RevisionRow,
  workspaceId: string,
  moduleCode: string,
  id: string,
  revision: number,
): RevisionRow {
  const s = row.snapshot;
  const ok =
    row.workspace_id === workspaceId &&
    row.record_id === id &&
    row.revision === revision &&
    row.module_code === moduleCode &&
    s?.workspaceId === row.workspace_id &&
    s.moduleCode === row.module_code &&
    s.id === row.record_id &&
    s.revision === row.revision &&
    typeof s.payload === 'object' &&
    s.payload !== null;
  if (!ok) throw new IntegrityError('a revision snapshot does not match its row or parent');
  return row;
}

function toView(row: RevisionRow): RecordView {
  return {
    id: row.record_id,
    moduleCode: row.module_code,
    revision: row.revision,
    data: row.snapshot.payload,
    createdBy: row.created_by,
    createdAt: new Date(row.record_created_at).toISOString(),
    revisionCreatedAt: new Date(row.created_at).toISOString(),
  };
}

function toExecutionView(row: ExecutionRow): FeatureExecutionView {
  return {
    id: row.id,
    featureId: row.feature_id,
    mode: row.mode,
    status: row.status.toLowerCase() as FeatureExecutionView['status'],
    baseRevision: row.base_revision,
    resultRevision: row.result_revision,
    createdAt: new Date(row.created_at).toISOString(),
  };
}
