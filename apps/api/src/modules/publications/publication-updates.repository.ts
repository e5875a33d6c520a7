import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { publicationUpdates, sql, type SQL, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder, type PagePosition } from '../../common/page-cursor';
import type { PublicationUpdateView } from './publication-update-view';

export type PublicationUpdateRow = Pick<
  SqlRow<typeof publicationUpdates>,
  | 'id'
  | 'publication_id'
  | 'draft_id'
  | 'revision'
  | 'status'
  | 'error_code'
  | 'operation_id'
  | 'created_at'
  | 'applied_at'
>;

const COLUMNS = sql`id, publication_id, draft_id, revision, status, error_code, operation_id, created_at, applied_at`;

/**
 * SQL of product updates (sql/025). Every transition is conditional on the current status, so a
 * redelivered event never moves an update backwards or applies it twice; which update may be
 * sent is decided under the publication's row lock (PublicationsRepository.lockLive).
 */
@Injectable()
export class PublicationUpdatesRepository {
  constructor(private readonly db: Database) {}

  /** False when an open or applied update of this revision exists (the partial unique index). */
  async insert(u: {
    id: string;
    publicationId: string;
    draftId: string;
    revision: number;
    operationId: string;
    createdBy: string;
  }): Promise<boolean> {
    const r = await this.db.requireTransaction('publication update insert').execute(sql`
      insert into publication_updates (workspace_id, id, publication_id, draft_id, revision, operation_id, created_by)
      values (app_current_workspace(), ${u.id}, ${u.publicationId}, ${u.draftId}, ${u.revision}, ${u.operationId},
              ${u.createdBy})
      on conflict (workspace_id, publication_id, revision) where status in ('pending', 'sending', 'applied')
      do nothing`);
    return r.rowCount === 1;
  }

  async findRow(id: string, options: { lock?: boolean } = {}): Promise<PublicationUpdateRow | undefined> {
    const executor = options.lock ? this.db.requireTransaction('publication update lock') : this.db.executor;
    const { rows } = await executor.execute<PublicationUpdateRow>(sql`
      select ${COLUMNS} from publication_updates where workspace_id = app_current_workspace() and id = ${id}
      ${options.lock ? sql`for update` : sql``}`);
    return rows[0];
  }

  async find(publicationId: string, id: string): Promise<PublicationUpdateView | undefined> {
    const row = await this.findRow(id);
    return row?.publication_id === publicationId ? toView(row) : undefined;
  }

  /** As the accepting request returned it: pending, from the immutable columns only. */
  async findAsAccepted(id: string): Promise<PublicationUpdateView | undefined> {
    const row = await this.findRow(id);
    return row && toView({ ...row, status: 'pending', error_code: null, applied_at: null });
  }

  /** A publication's updates, newest first (an index range: sql/025). */
  async list(publicationId: string, limit: number, after?: PagePosition): Promise<PublicationUpdateView[]> {
    const { rows } = await this.db.executor.execute<PublicationUpdateRow>(sql`
      select ${COLUMNS} from publication_updates
       where workspace_id = app_current_workspace() and publication_id = ${publicationId} ${afterCursor(after)}
       ${pageOrder()} limit ${limit}`);
    return rows.map(toView);
  }

  /** pending → sending, once it holds the product's send slot. */
  async markSending(id: string): Promise<boolean> {
    return this.move(id, ['pending', 'sending'], sql`status = 'sending'`);
  }

  async markApplied(id: string): Promise<boolean> {
    return this.move(id, ['sending'], sql`status = 'applied', applied_at = now(), error_code = null`);
  }

  async markSuperseded(id: string): Promise<boolean> {
    return this.move(
      id,
      ['pending'],
      sql`status = 'superseded', error_code = 'PUBLICATION_UPDATE_SUPERSEDED'`,
    );
  }

  async markFailed(id: string, errorCode: string): Promise<boolean> {
    return this.move(id, ['pending', 'sending'], sql`status = 'failed', error_code = ${errorCode}`);
  }

  async markOutcomeUnknown(id: string, errorCode: string): Promise<boolean> {
    return this.move(id, ['sending'], sql`status = 'outcome_unknown', error_code = ${errorCode}`);
  }

  /**
   * After a dead letter, in one statement: sending → outcome_unknown (it may have been sent),
   * pending → failed. Returns the new status, or undefined when it was already decided.
   */
  async settleAbandoned(id: string, errorCode: string): Promise<'outcome_unknown' | 'failed' | undefined> {
    const { rows } = await this.db.requireTransaction('publication update abandoned').execute<{
      status: 'outcome_unknown' | 'failed';
    }>(sql`
      update publication_updates
         set status = case when status = 'sending' then 'outcome_unknown' else 'failed' end,
             error_code = ${errorCode}, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'sending')
      returning status`);
    return rows[0]?.status;
  }

  /**
   * The hand-off once the product's slot is free: waiting updates no longer newest (or not newer
   * than live) become superseded, returning their operations; the newest waiting one, if any,
   * is returned to be sent.
   */
  async settleWaiting(
    publicationId: string,
    liveRevision: number,
  ): Promise<{ superseded: string[]; next: { id: string; operationId: string } | undefined }> {
    const tx = this.db.requireTransaction('publication update hand-off');
    const { rows: superseded } = await tx.execute<{ operation_id: string }>(sql`
      update publication_updates u
         set status = 'superseded', error_code = 'PUBLICATION_UPDATE_SUPERSEDED', updated_at = now()
       where u.workspace_id = app_current_workspace() and u.publication_id = ${publicationId}
         and u.status = 'pending'
         and (u.revision <= ${liveRevision}
              or exists (select 1 from publication_updates n
                          where n.workspace_id = u.workspace_id and n.publication_id = u.publication_id
                            and n.revision > u.revision and n.status in ('pending', 'sending', 'applied')))
      returning u.operation_id`);
    const { rows: next } = await tx.execute<{ id: string; operation_id: string }>(sql`
      select id, operation_id from publication_updates
       where workspace_id = app_current_workspace() and publication_id = ${publicationId} and status = 'pending'
       order by revision desc limit 1`);
    return {
      superseded: superseded.map((r) => r.operation_id),
      next: next[0] && { id: next[0].id, operationId: next[0].operation_id },
    };
  }

  private async move(id: string, from: readonly string[], set: SQL): Promise<boolean> {
    const r = await this.db.requireTransaction('publication update transition').execute(sql`
      update publication_updates set ${set}, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status = any(${sql.param(from)}::text[])`);
    return r.rowCount === 1;
  }
}

function toView(row: PublicationUpdateRow): PublicationUpdateView {
  return {
    id: row.id,
    publicationId: row.publication_id,
    draftId: row.draft_id,
    revision: row.revision,
    status: row.status,
    errorCode: row.error_code as PublicationUpdateView['errorCode'],
    createdAt: new Date(row.created_at).toISOString(),
    appliedAt: row.applied_at ? new Date(row.applied_at).toISOString() : null,
  };
}
