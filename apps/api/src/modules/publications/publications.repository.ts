import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { publications, sql, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder, type PagePosition } from '../../common/page-cursor';
import type { PublicationView } from './publication-view';

type PublicationRow = Pick<
  SqlRow<typeof publications>,
  | 'id'
  | 'store_id'
  | 'draft_id'
  | 'revision'
  | 'status'
  | 'platform_product_id'
  | 'error_code'
  | 'created_at'
  | 'published_at'
  | 'live_revision'
>;

/** A live product as an update's claim sees it, under the publication's row lock. */
export type LiveProduct = Pick<
  SqlRow<typeof publications>,
  'status' | 'store_id' | 'platform_product_id' | 'live_revision' | 'sending_revision'
> & {
  /** The newest revision of an update requested and not failed, superseded or unknown. */
  newest_requested: number | null;
};

const COLUMNS = sql`id, store_id, draft_id, revision, status, platform_product_id, error_code, created_at, published_at,
  live_revision`;

/** SQL of publications; worker transitions are conditional on the current status. */
@Injectable()
export class PublicationsRepository {
  constructor(private readonly db: Database) {}

  /** False when the draft already has a (non-failed) first publication to this store. */
  async insert(p: {
    id: string;
    storeId: string;
    draftId: string;
    revision: number;
    createdBy: string;
  }): Promise<boolean> {
    const r = await this.db.requireTransaction('publication insert').execute(sql`
      insert into publications (workspace_id, id, store_id, draft_id, revision, created_by)
      values (app_current_workspace(), ${p.id}, ${p.storeId}, ${p.draftId}, ${p.revision}, ${p.createdBy})
      on conflict (workspace_id, store_id, draft_id) where status <> 'failed' do nothing`);
    return r.rowCount === 1;
  }

  async find(id: string): Promise<PublicationView | undefined> {
    const { rows } = await this.db.executor.execute<PublicationRow>(
      sql`select ${COLUMNS} from publications where workspace_id = app_current_workspace() and id = ${id}`,
    );
    return rows[0] && toView(rows[0]);
  }

  /** As the accepting request returned it: pending, from the immutable columns only. */
  async findAsAccepted(id: string): Promise<PublicationView | undefined> {
    const view = await this.find(id);
    return (
      view && {
        ...view,
        status: 'pending',
        platformProductId: null,
        liveRevision: null,
        errorCode: null,
        publishedAt: null,
      }
    );
  }

  async list(limit: number, after?: PagePosition): Promise<PublicationView[]> {
    const { rows } = await this.db.executor.execute<PublicationRow>(sql`
      select ${COLUMNS} from publications where workspace_id = app_current_workspace() ${afterCursor(after)}
       ${pageOrder()} limit ${limit}`);
    return rows.map(toView);
  }

  async markPublishing(id: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update publications set status = 'publishing', updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'publishing')`);
    return r.rowCount === 1;
  }

  /** Also from outcome_unknown: a late answer of the marketplace settles what we did not know. */
  async markPublished(id: string, platformProductId: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update publications set status = 'published', platform_product_id = ${platformProductId}, published_at = now(),
             live_revision = revision, error_code = null, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'publishing', 'outcome_unknown')`);
    return r.rowCount === 1;
  }

  /** The create may have reached the marketplace: keep the slot, never free it as 'failed'. */
  async markOutcomeUnknown(id: string, errorCode: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update publications set status = 'outcome_unknown', error_code = ${errorCode}, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'publishing')`);
    return r.rowCount === 1;
  }

  /**
   * After a dead letter, in one statement: publishing → outcome_unknown (a create may have been
   * sent), pending → failed. Returns the new status, or undefined when it was already decided.
   */
  async settleAbandoned(id: string, errorCode: string): Promise<'outcome_unknown' | 'failed' | undefined> {
    const { rows } = await this.db.executor.execute<{ status: 'outcome_unknown' | 'failed' }>(sql`
      update publications
         set status = case when status = 'publishing' then 'outcome_unknown' else 'failed' end,
             error_code = ${errorCode}, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'publishing')
      returning status`);
    return rows[0]?.status;
  }

  /**
   * outcome_unknown → publishing for a retry (a create may have been sent: the job must treat it
   * so). Locks the row; false when it is in another state.
   */
  async reopenUnknown(id: string): Promise<boolean> {
    const r = await this.db.requireTransaction('publication retry').execute(sql`
      update publications set status = 'publishing', error_code = null, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status = 'outcome_unknown'`);
    return r.rowCount === 1;
  }

  /** The publication holding the (store, draft) slot, if any. */
  async findActiveFor(storeId: string, draftId: string): Promise<{ id: string; status: string } | undefined> {
    const { rows } = await this.db.executor.execute<Pick<SqlRow<typeof publications>, 'id' | 'status'>>(sql`
      select id, status from publications
       where workspace_id = app_current_workspace() and store_id = ${storeId} and draft_id = ${draftId}
         and status <> 'failed'`);
    return rows[0];
  }

  async markFailed(id: string, errorCode: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update publications set status = 'failed', error_code = ${errorCode}, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'publishing')`);
    return r.rowCount === 1;
  }

  /**
   * Locks the publication (the order of its updates is decided under this lock) and reads what
   * an update's claim decides on: the live revision, the update in flight, the newest requested.
   */
  async lockLive(id: string): Promise<LiveProduct | undefined> {
    const { rows } = await this.db.requireTransaction('publication update claim').execute<LiveProduct>(sql`
      select p.status, p.store_id, p.platform_product_id, p.live_revision, p.sending_revision,
             (select max(u.revision) from publication_updates u
               where u.workspace_id = p.workspace_id and u.publication_id = p.id
                 and u.status in ('pending', 'sending', 'applied')) as newest_requested
        from publications p
       where p.workspace_id = app_current_workspace() and p.id = ${id}
       for update of p`);
    return rows[0];
  }

  /** Takes the one send slot of the product for `revision`: only when free and newer than live. */
  async takeSendingSlot(id: string, revision: number): Promise<boolean> {
    const r = await this.db.requireTransaction('publication update slot').execute(sql`
      update publications set sending_revision = ${revision}, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status = 'published'
         and sending_revision is null and live_revision < ${revision}`);
    return r.rowCount === 1;
  }

  /** The update holding the slot was applied: it is live (forward only: sql/025's trigger). */
  async advanceLive(id: string, revision: number): Promise<boolean> {
    const r = await this.db.requireTransaction('publication update applied').execute(sql`
      update publications set live_revision = ${revision}, sending_revision = null, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id}
         and sending_revision = ${revision} and live_revision < ${revision}`);
    return r.rowCount === 1;
  }

  /** The update holding the slot ended without being applied (or unknown): the slot is free. */
  async releaseSendingSlot(id: string, revision: number): Promise<boolean> {
    const r = await this.db.requireTransaction('publication update released').execute(sql`
      update publications set sending_revision = null, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and sending_revision = ${revision}`);
    return r.rowCount === 1;
  }
}

function toView(row: PublicationRow): PublicationView {
  return {
    id: row.id,
    storeId: row.store_id,
    draftId: row.draft_id,
    revision: row.revision,
    status: row.status,
    platformProductId: row.platform_product_id,
    liveRevision: row.live_revision,
    errorCode: row.error_code,
    createdAt: new Date(row.created_at).toISOString(),
    publishedAt: row.published_at ? new Date(row.published_at).toISOString() : null,
  };
}
