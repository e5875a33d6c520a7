import {
  bigint,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uuid,
} from 'drizzle-orm/pg-core';
import { bytea } from './foundation';

/**
 * Mirrors the listing domain's tables (sql/004, 006, 007, 013, 014, 016, 018). The SQL files are
 * the source of truth; packages/db/test/schema.integration-spec.ts fails when the two drift.
 */

// Generic in the name: SqlRow keys rows by the literal column name.
const ts = <N extends string>(name: N) => timestamp(name, { withTimezone: true });
const createdAt = () => ts('created_at').notNull().defaultNow();
const updatedAt = () => ts('updated_at').notNull().defaultNow();
const jobStatus = ['pending', 'running', 'succeeded', 'failed'] as const;

export const outboxInbox = pgTable(
  'outbox_inbox',
  {
    workspaceId: uuid('workspace_id').notNull(),
    handler: text('handler').notNull(),
    eventId: uuid('event_id').notNull(),
    processedAt: ts('processed_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.handler, t.eventId] })],
);

export const operations = pgTable(
  'operations',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    kind: text('kind').notNull(),
    status: text('status', { enum: jobStatus }).notNull().default('pending'),
    resourceType: text('resource_type').notNull(),
    resourceId: uuid('resource_id').notNull(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    attempts: integer('attempts').notNull().default(0),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    startedAt: ts('started_at'),
    completedAt: ts('completed_at'),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);

export const stores = pgTable(
  'stores',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    platform: text('platform', { enum: ['sim'] }).notNull(),
    storeExternalId: text('store_external_id').notNull(),
    status: text('status', {
      enum: ['pending_verification', 'active', 'invalid_credentials', 'verification_failed'],
    })
      .notNull()
      .default('pending_verification'),
    credentialVersion: integer('credential_version').notNull().default(1),
    shopName: text('shop_name'),
    verifiedAt: ts('verified_at'),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.id] }),
    unique().on(t.workspaceId, t.platform, t.storeExternalId),
  ],
);

/** AES-256-GCM ciphertext of a store's credentials, one row per version (never returned). */
export const storeCredentials = pgTable(
  'store_credentials',
  {
    workspaceId: uuid('workspace_id').notNull(),
    storeId: uuid('store_id').notNull(),
    version: integer('version').notNull(),
    keyId: text('key_id').notNull(),
    iv: bytea('iv').notNull(),
    ciphertext: bytea('ciphertext').notNull(),
    authTag: bytea('auth_tag').notNull(),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.storeId, t.version] })],
);

export const publications = pgTable(
  'publications',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    storeId: uuid('store_id').notNull(),
    draftId: uuid('draft_id').notNull(),
    revision: integer('revision').notNull(),
    status: text('status', { enum: ['pending', 'publishing', 'published', 'failed', 'outcome_unknown'] })
      .notNull()
      .default('pending'),
    platformProductId: text('platform_product_id'),
    errorCode: text('error_code'),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    publishedAt: ts('published_at'),
    /** The revision the marketplace product shows; only moves forward (sql/025). */
    liveRevision: integer('live_revision'),
    /** The one update in flight to the marketplace, if any (sql/025). */
    sendingRevision: integer('sending_revision'),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);

export const publicationUpdates = pgTable(
  'publication_updates',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    publicationId: uuid('publication_id').notNull(),
    draftId: uuid('draft_id').notNull(),
    revision: integer('revision').notNull(),
    status: text('status', {
      enum: ['pending', 'sending', 'applied', 'superseded', 'failed', 'outcome_unknown'],
    })
      .notNull()
      .default('pending'),
    errorCode: text('error_code'),
    operationId: uuid('operation_id').notNull(),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    appliedAt: ts('applied_at'),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);

export const storeSyncs = pgTable(
  'store_syncs',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    storeId: uuid('store_id').notNull(),
    status: text('status', { enum: jobStatus }).notNull().default('pending'),
    cursor: text('cursor'),
    pages: integer('pages').notNull().default(0),
    itemsSynced: integer('items_synced').notNull().default(0),
    errorCode: text('error_code'),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    completedAt: ts('completed_at'),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);

export const storeProducts = pgTable(
  'store_products',
  {
    workspaceId: uuid('workspace_id').notNull(),
    storeId: uuid('store_id').notNull(),
    platformProductId: text('platform_product_id').notNull(),
    title: text('title').notNull(),
    price: text('price'),
    platformStatus: text('platform_status').notNull(),
    platformCreatedAt: ts('platform_created_at'),
    lastSyncId: uuid('last_sync_id').notNull(),
    firstSeenAt: ts('first_seen_at').notNull().defaultNow(),
    lastSeenAt: ts('last_seen_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.storeId, t.platformProductId] })],
);

export const aiTasks = pgTable(
  'ai_tasks',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    kind: text('kind', { enum: ['text', 'category', 'image'] }).notNull(),
    draftId: uuid('draft_id').notNull(),
    baseRevision: integer('base_revision').notNull(),
    options: jsonb('options').notNull().default({}),
    executionId: uuid('execution_id').notNull(),
    status: text('status', { enum: jobStatus }).notNull().default('pending'),
    result: jsonb('result'),
    resultRevision: integer('result_revision'),
    errorCode: text('error_code'),
    createdBy: uuid('created_by').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    completedAt: ts('completed_at'),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] }), unique().on(t.workspaceId, t.executionId)],
);

export const media = pgTable(
  'media',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    status: text('status', { enum: ['awaiting_content', 'uploaded', 'processing', 'ready', 'failed'] })
      .notNull()
      .default('awaiting_content'),
    filename: text('filename').notNull(),
    contentType: text('content_type', {
      enum: ['image/png', 'image/jpeg', 'image/webp', 'image/gif'],
    }).notNull(),
    declaredSize: bigint('declared_size', { mode: 'number' }).notNull(),
    originalKey: text('original_key').notNull(),
    checksumSha256: text('checksum_sha256'),
    width: integer('width'),
    height: integer('height'),
    thumbnailKey: text('thumbnail_key'),
    thumbnailWidth: integer('thumbnail_width'),
    thumbnailHeight: integer('thumbnail_height'),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    operationId: uuid('operation_id'),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    uploadedAt: ts('uploaded_at'),
    completedAt: ts('completed_at'),
    processedAt: ts('processed_at'),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);

export const materialTransfers = pgTable(
  'material_transfers',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    status: text('status', { enum: jobStatus }).notNull().default('pending'),
    sourceUrl: text('source_url').notNull(),
    sourceKey: text('source_key').notNull(),
    objectKey: text('object_key').notNull(),
    contentType: text('content_type'),
    size: bigint('size', { mode: 'number' }),
    checksumSha256: text('checksum_sha256'),
    width: integer('width'),
    height: integer('height'),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    operationId: uuid('operation_id').notNull(),
    createdBy: uuid('created_by'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    completedAt: ts('completed_at'),
    /** The media the transfer became once it succeeded (sql/026); none for older transfers. */
    mediaId: uuid('media_id'),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);

/** Visible to an account only through app_user_invitations() (sql/018). */
export const workspaceInvitations = pgTable('workspace_invitations', {
  id: uuid('id').primaryKey(),
  workspaceId: uuid('workspace_id').notNull(),
  email: text('email').notNull(),
  role: text('role', { enum: ['admin', 'member'] }).notNull(),
  invitedBy: uuid('invited_by').notNull(),
  createdAt: createdAt(),
  sentAt: ts('sent_at').notNull().defaultNow(),
  expiresAt: ts('expires_at').notNull(),
  acceptedAt: ts('accepted_at'),
  declinedAt: ts('declined_at'),
});
