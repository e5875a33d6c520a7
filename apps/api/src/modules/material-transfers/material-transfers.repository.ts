import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { materialTransfers, sql, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder } from '../../common/page-cursor';
import type { MaterialTransferView, TransferStatus } from './material-transfer-view';

export type TransferRow = {
  id: string;
  status: TransferStatus;
  source_url: string;
  source_key: string;
  object_key: string;
  content_type: string | null;
  size: string | number | null;
  checksum_sha256: string | null;
  width: number | null;
  height: number | null;
  error_code: string | null;
  error_message: string | null;
  operation_id: string;
  created_by: string | null;
  media_id: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
};

export interface TransferFacts {
  contentType: string;
  size: number;
  checksumSha256: string;
  width: number;
  height: number;
}

const COLUMNS = sql`id, status, source_url, source_key, object_key, content_type, size, checksum_sha256, width, height,
  error_code, error_message, operation_id, created_by, media_id, created_at, updated_at, completed_at`;

/** SQL of material transfers; status changes are conditional and report whether they applied. */
@Injectable()
export class MaterialTransfersRepository {
  constructor(private readonly db: Database) {}

  /**
   * Inserts the transfer unless the workspace already has one for this source key that did not
   * fail (sql/016); then returns the existing one's ids instead. A concurrent insert of the same
   * key waits for the first transaction and then sees it.
   */
  async insertUnlessExists(t: {
    id: string;
    sourceUrl: string;
    sourceKey: string;
    objectKey: string;
    operationId: string;
    createdBy: string | null;
  }): Promise<{ inserted: true } | { inserted: false; id: string; operationId: string }> {
    const tx = this.db.requireTransaction('material transfer insert');
    const { rows } = await tx.execute<Pick<SqlRow<typeof materialTransfers>, 'id'>>(sql`
      insert into material_transfers (workspace_id, id, source_url, source_key, object_key, operation_id, created_by)
      values (app_current_workspace(), ${t.id}, ${t.sourceUrl}, ${t.sourceKey}, ${t.objectKey}, ${t.operationId}, ${t.createdBy})
      on conflict (workspace_id, source_key) where status <> 'failed' do nothing
      returning id`);
    if (rows.length) return { inserted: true };
    const existing = await tx.execute<Pick<SqlRow<typeof materialTransfers>, 'id' | 'operation_id'>>(sql`
      select id, operation_id from material_transfers
       where workspace_id = app_current_workspace() and source_key = ${t.sourceKey} and status <> 'failed'`);
    const row = existing.rows[0]!;
    return { inserted: false, id: row.id, operationId: row.operation_id };
  }

  async findRow(id: string, options: { lock?: boolean } = {}): Promise<TransferRow | undefined> {
    const executor = options.lock ? this.db.requireTransaction('material transfer lock') : this.db.executor;
    const { rows } = await executor.execute<TransferRow>(sql`
      select ${COLUMNS} from material_transfers where workspace_id = app_current_workspace() and id = ${id}
      ${options.lock ? sql`for update` : sql``}`);
    return rows[0];
  }

  async find(id: string): Promise<MaterialTransferView | undefined> {
    const row = await this.findRow(id);
    return row && toView(row);
  }

  /** The transfer exactly as the accepting request returned it, from columns that never change. */
  async findAsAccepted(id: string): Promise<MaterialTransferView | undefined> {
    const row = await this.findRow(id);
    return (
      row &&
      toView({
        ...row,
        status: 'pending',
        content_type: null,
        size: null,
        checksum_sha256: null,
        width: null,
        height: null,
        error_code: null,
        error_message: null,
        media_id: null,
        updated_at: row.created_at,
        completed_at: null,
      })
    );
  }

  /** Newest first; keyset on (created_at to the millisecond, as the cursor carries it, id). */
  async list(limit: number, after?: { createdAt: string; id: string }): Promise<MaterialTransferView[]> {
    const { rows } = await this.db.executor.execute<TransferRow>(sql`
      select ${COLUMNS} from material_transfers
       where workspace_id = app_current_workspace()
         ${afterCursor(after)}
       ${pageOrder()} limit ${limit}`);
    return rows.map(toView);
  }

  async markRunning(id: string): Promise<boolean> {
    const r = await this.db.requireTransaction('material transfer running').execute(sql`
      update material_transfers set status = 'running', updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')`);
    return r.rowCount === 1;
  }

  async markSucceeded(id: string, facts: TransferFacts): Promise<boolean> {
    const r = await this.db.requireTransaction('material transfer succeeded').execute(sql`
      update material_transfers set status = 'succeeded', content_type = ${facts.contentType}, size = ${facts.size},
             checksum_sha256 = ${facts.checksumSha256}, width = ${facts.width}, height = ${facts.height},
             completed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')`);
    return r.rowCount === 1;
  }

  /**
   * Records the media a succeeded transfer became, once: in the settlement that made it succeed
   * (a transfer has at most one media, sql/026).
   */
  async attachMedia(id: string, mediaId: string): Promise<boolean> {
    const r = await this.db.requireTransaction('material transfer media').execute(sql`
      update material_transfers set media_id = ${mediaId}, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status = 'succeeded' and media_id is null`);
    return r.rowCount === 1;
  }

  async markFailed(id: string, error: { code: string; message: string }): Promise<boolean> {
    const r = await this.db.requireTransaction('material transfer failed').execute(sql`
      update material_transfers set status = 'failed', error_code = ${error.code}, error_message = ${error.message},
             completed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')`);
    return r.rowCount === 1;
  }
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function toView(row: TransferRow): MaterialTransferView {
  return {
    id: row.id,
    status: row.status,
    sourceUrl: row.source_key,
    objectKey: row.object_key,
    contentType: row.content_type,
    size: row.size === null ? null : Number(row.size),
    checksumSha256: row.checksum_sha256,
    width: row.width,
    height: row.height,
    error: row.error_code ? { code: row.error_code, message: row.error_message ?? '' } : null,
    operationId: row.operation_id,
    mediaId: row.media_id,
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
    completedAt: iso(row.completed_at),
  };
}
