import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { sql } from '@listing/db';
import { afterCursor, pageOrder } from '../../common/page-cursor';
import type { MediaStatus, MediaView } from './media-view';

export type MediaRow = {
  id: string;
  status: MediaStatus;
  filename: string;
  content_type: string;
  declared_size: string | number;
  original_key: string;
  checksum_sha256: string | null;
  width: number | null;
  height: number | null;
  thumbnail_key: string | null;
  thumbnail_width: number | null;
  thumbnail_height: number | null;
  error_code: string | null;
  error_message: string | null;
  operation_id: string | null;
  created_at: Date;
  updated_at: Date;
  uploaded_at: Date | null;
  completed_at: Date | null;
  processed_at: Date | null;
};

export interface DerivedFacts {
  checksumSha256: string;
  width: number;
  height: number;
  thumbnailKey: string;
  thumbnailWidth: number;
  thumbnailHeight: number;
}

const COLUMNS = sql`id, status, filename, content_type, declared_size, original_key, checksum_sha256, width, height,
  thumbnail_key, thumbnail_width, thumbnail_height, error_code, error_message, operation_id,
  created_at, updated_at, uploaded_at, completed_at, processed_at`;

/**
 * SQL of media. Every status change is conditional on the expected current status and reports
 * whether it applied, so a retried request or a redelivered job can never move a media backwards
 * or process it twice.
 */
@Injectable()
export class MediaRepository {
  constructor(private readonly db: Database) {}

  async insert(m: {
    id: string;
    filename: string;
    contentType: string;
    size: number;
    originalKey: string;
    createdBy: string | null;
  }): Promise<void> {
    await this.db.requireTransaction('media insert').execute(sql`
      insert into media (workspace_id, id, filename, content_type, declared_size, original_key, created_by)
      values (app_current_workspace(), ${m.id}, ${m.filename}, ${m.contentType}, ${m.size}, ${m.originalKey}, ${m.createdBy})`);
  }

  /**
   * A media whose bytes are already stored and checked elsewhere (a material transfer's copy):
   * inserted processing, bound to its operation, uploaded and completed now, as `complete` leaves
   * an upload.
   */
  async insertProcessing(m: {
    id: string;
    filename: string;
    contentType: string;
    size: number;
    originalKey: string;
    operationId: string;
    createdBy: string | null;
  }): Promise<void> {
    await this.db.requireTransaction('media insert processing').execute(sql`
      insert into media (workspace_id, id, status, filename, content_type, declared_size, original_key,
                         operation_id, created_by, uploaded_at, completed_at)
      values (app_current_workspace(), ${m.id}, 'processing', ${m.filename}, ${m.contentType}, ${m.size},
              ${m.originalKey}, ${m.operationId}, ${m.createdBy}, now(), now())`);
  }

  async find(id: string): Promise<MediaView | undefined> {
    const row = await this.findRow(id);
    return row && toView(row);
  }

  async findRow(id: string, options: { lock?: boolean } = {}): Promise<MediaRow | undefined> {
    const executor = options.lock ? this.db.requireTransaction('media lock') : this.db.executor;
    const { rows } = await executor.execute<MediaRow>(sql`
      select ${COLUMNS} from media where workspace_id = app_current_workspace() and id = ${id}
      ${options.lock ? sql`for update` : sql``}`);
    return rows[0];
  }

  /** The media exactly as its creation returned it, from columns that never change. */
  async findAsCreated(id: string): Promise<MediaView | undefined> {
    const row = await this.findRow(id);
    return (
      row &&
      toView({
        ...row,
        status: 'awaiting_content',
        ...NOTHING_DERIVED,
        operation_id: null,
        updated_at: row.created_at,
        uploaded_at: null,
        completed_at: null,
      })
    );
  }

  /**
   * The media exactly as `complete` returned it: status processing, nothing derived yet. Content
   * and uploaded_at are frozen once completed, completed_at is written once.
   */
  async findAsAccepted(id: string): Promise<MediaView | undefined> {
    const row = await this.findRow(id);
    if (!row || !row.completed_at) return undefined;
    return toView({ ...row, status: 'processing', ...NOTHING_DERIVED, updated_at: row.completed_at });
  }

  /** Newest first; keyset on (created_at to the millisecond, as the cursor carries it, id). */
  async list(limit: number, after?: { createdAt: string; id: string }): Promise<MediaView[]> {
    const { rows } = await this.db.executor.execute<MediaRow>(sql`
      select ${COLUMNS} from media
       where workspace_id = app_current_workspace()
         ${afterCursor(after)}
       ${pageOrder()} limit ${limit}`);
    return rows.map(toView);
  }

  /** Of `ids`, those naming no media of the bound workspace, or a failed one (never an image). */
  async unusable(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.db.executor.execute<{ id: string }>(sql`
      select u.id::text as id from unnest(${sql.param(ids)}::uuid[]) as u(id)
       where not exists (select 1 from media m
                          where m.workspace_id = app_current_workspace() and m.id = u.id and m.status <> 'failed')`);
    return rows.map((r) => r.id);
  }

  /** Of `ids`, the ready media of the bound workspace, in one query (any order). */
  async findReady(ids: readonly string[]): Promise<MediaView[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.db.executor.execute<MediaRow>(sql`
      select ${COLUMNS} from media
       where workspace_id = app_current_workspace() and id = any(${sql.param(ids)}::uuid[])
         and status = 'ready'`);
    return rows.map(toView);
  }

  /** awaiting_content | uploaded → uploaded (content may be replaced until complete). */
  async markUploaded(id: string): Promise<boolean> {
    const r = await this.db.requireTransaction('media upload').execute(sql`
      update media set status = 'uploaded', uploaded_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('awaiting_content', 'uploaded')`);
    return r.rowCount === 1;
  }

  /** uploaded → processing, bound to its operation; completed_at is written here only. */
  async markProcessing(id: string, operationId: string): Promise<boolean> {
    const r = await this.db.requireTransaction('media complete').execute(sql`
      update media set status = 'processing', operation_id = ${operationId}, completed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status = 'uploaded'`);
    return r.rowCount === 1;
  }

  async markReady(id: string, operationId: string, facts: DerivedFacts): Promise<boolean> {
    const r = await this.db.requireTransaction('media ready').execute(sql`
      update media set status = 'ready', checksum_sha256 = ${facts.checksumSha256}, width = ${facts.width},
             height = ${facts.height}, thumbnail_key = ${facts.thumbnailKey},
             thumbnail_width = ${facts.thumbnailWidth}, thumbnail_height = ${facts.thumbnailHeight},
             processed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and operation_id = ${operationId}
         and status = 'processing'`);
    return r.rowCount === 1;
  }

  async markFailed(
    id: string,
    operationId: string,
    error: { code: string; message: string },
  ): Promise<boolean> {
    const r = await this.db.requireTransaction('media failed').execute(sql`
      update media set status = 'failed', error_code = ${error.code}, error_message = ${error.message},
             processed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and operation_id = ${operationId}
         and status = 'processing'`);
    return r.rowCount === 1;
  }
}

const NOTHING_DERIVED = {
  checksum_sha256: null,
  width: null,
  height: null,
  thumbnail_key: null,
  thumbnail_width: null,
  thumbnail_height: null,
  error_code: null,
  error_message: null,
  processed_at: null,
} as const;

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function toView(row: MediaRow): MediaView {
  return {
    id: row.id,
    status: row.status,
    filename: row.filename,
    contentType: row.content_type,
    size: Number(row.declared_size),
    objectKey: row.original_key,
    checksumSha256: row.checksum_sha256,
    width: row.width,
    height: row.height,
    thumbnail:
      row.thumbnail_key && row.thumbnail_width && row.thumbnail_height
        ? {
            objectKey: row.thumbnail_key,
            contentType: 'image/png',
            width: row.thumbnail_width,
            height: row.thumbnail_height,
          }
        : null,
    error: row.error_code ? { code: row.error_code, message: row.error_message ?? '' } : null,
    operationId: row.operation_id,
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
    uploadedAt: iso(row.uploaded_at),
    completedAt: iso(row.completed_at),
    processedAt: iso(row.processed_at),
  };
}
