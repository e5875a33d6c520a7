import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { OutboxWriter } from '@listing/outbox';
import { AuditService } from '../audit/audit.service';
import { AsyncCommands } from '../operations/async-commands.service';
import { mediaProcessJob } from './media.jobs';
import { MediaRepository } from './media.repository';

/** The longest filename the media table accepts (sql/007), in characters. */
const MAX_FILENAME = 255;

/** What a material transfer hands over once its copy is stored and checked. */
export interface CopiedImage {
  transferId: string;
  /** Where the copy is: it becomes the media's original, so the bytes are stored once. */
  objectKey: string;
  contentType: string;
  size: number;
  /** A name for people (the source's last path segment), sanitised here; may be empty. */
  filename: string;
  createdBy: string | null;
}

/**
 * Media that come from elsewhere than the upload routes. The media module keeps its table and its
 * job to itself: another module hands over bytes it has stored, and gets a media id back.
 */
@Injectable()
export class MediaIntake {
  constructor(
    private readonly media: MediaRepository,
    private readonly commands: AsyncCommands,
    private readonly outbox: OutboxWriter,
    private readonly audit: AuditService,
  ) {}

  /**
   * In the caller's transaction (a transfer's settlement, so that it happens exactly once): a
   * media exactly as `complete` leaves an upload, processing under a new media.process operation
   * with its job appended, so the worker validates and derives it like any upload. Returns its id.
   */
  async fromTransfer(image: CopiedImage): Promise<string> {
    const id = randomUUID();
    const operationId = randomUUID();
    await this.commands.createOperation({
      id: operationId,
      kind: 'media.process',
      resourceType: 'media',
      resourceId: id,
      createdBy: image.createdBy,
    });
    await this.media.insertProcessing({
      id,
      filename: displayName(image.filename) ?? `transfer-${image.transferId}`,
      contentType: image.contentType,
      size: image.size,
      originalKey: image.objectKey,
      operationId,
      createdBy: image.createdBy,
    });
    // Ids only, as for the transfer itself: its source URL may be presigned.
    await this.audit.append({
      action: 'MEDIA_CREATED',
      entityType: 'media',
      entityId: id,
      actor: 'system',
      metadata: { transferId: image.transferId, operationId },
    });
    await this.outbox.appendJob(mediaProcessJob, { mediaId: id, operationId });
    return id;
  }
}

/**
 * A name the upload route would accept (createUploadSchema): separators become `_`, control
 * characters go, at most 255 UTF-16 units without splitting a character; null when nothing is
 * left.
 */
function displayName(raw: string): string | null {
  const cleaned = [...raw]
    .filter((c) => c.charCodeAt(0) >= 0x20 && c.charCodeAt(0) !== 0x7f)
    .map((c) => (c === '/' || c === '\\' ? '_' : c))
    .join('')
    .trim();
  let name = '';
  for (const c of cleaned) {
    if (name.length + c.length > MAX_FILENAME) break;
    name += c;
  }
  name = name.trim();
  return name.length ? name : null;
}
