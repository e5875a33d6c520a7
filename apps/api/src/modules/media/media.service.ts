import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  IdempotencyService,
  type IdempotentOutcome,
  type IdempotentRequestContext,
} from '@listing/idempotency';
import { OutboxWriter } from '@listing/outbox';
import { ContentLengthRequiredError, ResourceNotFoundError } from '../../common/domain-errors';
import { contentEtagOf, ifNoneMatchHits } from '../../common/http-params';
import { keysetPage } from '../../common/page-cursor';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { MEDIA_CONFIG, type MediaConfig } from '../../config/media-config';
import { AuditService } from '../audit/audit.service';
import { OBJECT_STORAGE, type ObjectStorage } from '../object-storage/object-storage.client';
import { AsyncCommands } from '../operations/async-commands.service';
import { isImageType, sniffImageType } from '../../common/image-sniffer';
import { mediaAcceptedPolicy, mediaCreatedPolicy } from './media-result-policies';
import type { MediaAccepted } from './media-view';
import type { MediaView } from './media-view';
import type { CreateUpload } from './media.dto';
import {
  MediaContentUnavailableError,
  MediaSizeMismatchError,
  MediaStateConflictError,
  MediaTooLargeError,
  MediaTypeMismatchError,
  MediaTypeUnsupportedError,
} from './media.errors';
import { mediaProcessJob, originalKey } from './media.jobs';
import { MediaRepository } from './media.repository';

/** A download's answer: the bytes with their type and ETag, or 304 when If-None-Match names them. */
export type MediaDownload =
  | { notModified: false; etag: string; contentType: string; body: Buffer }
  | { notModified: true; etag: string };

/**
 * Media uploads: create (Idempotency-Key, 201) → PUT the bytes (checked against the declaration
 * and by magic bytes) → complete (Idempotency-Key, 202 + operation) → the worker derives.
 */
@Injectable()
export class MediaService {
  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    private readonly media: MediaRepository,
    private readonly commands: AsyncCommands,
    private readonly outbox: OutboxWriter,
    private readonly audit: AuditService,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    @Inject(MEDIA_CONFIG) private readonly config: MediaConfig,
  ) {}

  createUpload(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    body: CreateUpload,
  ): Promise<IdempotentOutcome<MediaView>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: mediaCreatedPolicy(this.media),
      status: 201,
      prepare: async () => {
        const contentType = body.contentType.trim().toLowerCase();
        if (!isImageType(contentType)) throw new MediaTypeUnsupportedError();
        if (body.size > this.config.MEDIA_MAX_BYTES)
          throw new MediaTooLargeError(this.config.MEDIA_MAX_BYTES);
        return { ...body, contentType };
      },
      work: async (upload) => {
        const id = randomUUID();
        await this.media.insert({
          id,
          filename: upload.filename,
          contentType: upload.contentType,
          size: upload.size,
          originalKey: originalKey(auth.workspaceId, id),
          createdBy: auth.userId,
        });
        await this.audit.append({
          action: 'MEDIA_CREATED',
          entityType: 'media',
          entityId: id,
          actorUserId: auth.userId,
        });
        return (await this.media.findAsCreated(id))!;
      },
    });
  }

  /**
   * Stores the content. The row is locked for the whole step so a concurrent complete waits and
   * then sees the final bytes; after complete the content is frozen (409). Repeating the PUT with
   * the same bytes is harmless: the object is replaced by identical bytes.
   */
  uploadContent(
    auth: WorkspaceAuthContext,
    id: string,
    contentLength: string | undefined,
    bytes: Buffer,
  ): Promise<MediaView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const row = await this.media.findRow(id, { lock: true });
      if (!row) throw new ResourceNotFoundError('media');
      if (row.status !== 'awaiting_content' && row.status !== 'uploaded') {
        throw new MediaStateConflictError(row.status, 'upload content to');
      }
      if (contentLength === undefined || !/^\d+$/.test(contentLength)) throw new ContentLengthRequiredError();
      const declared = Number(row.declared_size);
      if (bytes.length > this.config.MEDIA_MAX_BYTES)
        throw new MediaTooLargeError(this.config.MEDIA_MAX_BYTES);
      if (Number(contentLength) !== bytes.length || bytes.length !== declared) {
        throw new MediaSizeMismatchError(declared, bytes.length);
      }
      const actual = sniffImageType(bytes);
      if (actual !== row.content_type) throw new MediaTypeMismatchError(row.content_type, actual);
      await this.storage.put(row.original_key, bytes, { contentType: row.content_type });
      await this.media.markUploaded(id);
      await this.audit.append({
        action: 'MEDIA_CONTENT_UPLOADED',
        entityType: 'media',
        entityId: id,
        actorUserId: auth.userId,
        metadata: { size: bytes.length },
      });
      return (await this.media.find(id))!;
    });
  }

  complete(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    id: string,
  ): Promise<IdempotentOutcome<MediaAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: mediaAcceptedPolicy(this.media, this.commands),
      status: 202,
      prepare: async () => undefined,
      work: async () => {
        const row = await this.media.findRow(id, { lock: true });
        if (!row) throw new ResourceNotFoundError('media');
        if (row.status !== 'uploaded') throw new MediaStateConflictError(row.status, 'complete');
        const operationId = randomUUID();
        await this.commands.createOperation({
          id: operationId,
          kind: 'media.process',
          resourceType: 'media',
          resourceId: id,
          createdBy: auth.userId,
        });
        await this.media.markProcessing(id, operationId);
        await this.audit.append({
          action: 'MEDIA_COMPLETED',
          entityType: 'media',
          entityId: id,
          actorUserId: auth.userId,
          metadata: { operationId },
        });
        await this.outbox.appendJob(mediaProcessJob, { mediaId: id, operationId });
        const [media, operation] = await Promise.all([
          this.media.findAsAccepted(id),
          this.commands.operationAsAccepted(operationId),
        ]);
        return { media: media!, operation: operation! };
      },
    });
  }

  get(auth: WorkspaceAuthContext, id: string): Promise<MediaView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const view = await this.media.find(id);
      if (!view) throw new ResourceNotFoundError('media');
      return view;
    });
  }

  /**
   * The media's bytes (its content, or its PNG thumbnail) from object storage. The row is read in
   * the workspace's transaction; the object store after it, with no transaction open. The ETag is
   * the stored object's SHA-256 (content may still be replaced until the media is completed, so it
   * is the object's, not the row's checksum); If-None-Match naming it answers 304 without
   * reading the bytes. No content before upload, and none once failed (the worker refused the
   * bytes as an image: not served); no thumbnail until ready.
   */
  async download(
    auth: WorkspaceAuthContext,
    id: string,
    what: 'content' | 'thumbnail',
    ifNoneMatch: string | undefined,
  ): Promise<MediaDownload> {
    const row = await this.db.withWorkspace(auth.workspaceId, () => this.media.findRow(id));
    if (!row) throw new ResourceNotFoundError('media');
    const unavailable = () => new MediaContentUnavailableError(what, row.status);
    const source =
      what === 'thumbnail'
        ? row.thumbnail_key && { key: row.thumbnail_key, contentType: 'image/png' }
        : row.status !== 'awaiting_content' &&
          row.status !== 'failed' && { key: row.original_key, contentType: row.content_type };
    if (!source) throw unavailable();
    if (ifNoneMatch !== undefined) {
      const head = await this.storage.head(source.key);
      if (!head) throw unavailable();
      const etag = contentEtagOf(head.sha256);
      if (ifNoneMatchHits(ifNoneMatch, etag)) return { notModified: true, etag };
    }
    const stored = await this.storage.get(source.key);
    if (!stored) throw unavailable();
    return {
      notModified: false,
      etag: contentEtagOf(stored.object.sha256),
      contentType: source.contentType,
      body: stored.body,
    };
  }

  list(auth: WorkspaceAuthContext, limit: number, cursor?: string) {
    return this.db.withWorkspace(auth.workspaceId, () =>
      keysetPage(limit, cursor, (n, after) => this.media.list(n, after)),
    );
  }
}
