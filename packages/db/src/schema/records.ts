import { integer, jsonb, pgTable, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';

/** Mirrors sql/002_records_kernel.sql (schema.integration-spec.ts checks it). */

// Generic in the name: SqlRow keys rows by the literal column name.
const ts = <N extends string>(name: N) => timestamp(name, { withTimezone: true });

export const records = pgTable(
  'records',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    moduleCode: text('module_code').notNull(),
    revision: integer('revision').notNull(),
    payload: jsonb('payload').notNull(),
    createdBy: uuid('created_by').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  // The unique key lets child tables reference a record of one module (module_code, id).
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] }), unique().on(t.workspaceId, t.moduleCode, t.id)],
);

export const recordRevisions = pgTable(
  'record_revisions',
  {
    workspaceId: uuid('workspace_id').notNull(),
    recordId: uuid('record_id').notNull(),
    revision: integer('revision').notNull(),
    snapshot: jsonb('snapshot').notNull(),
    createdBy: uuid('created_by').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.recordId, t.revision] })],
);

export const featureExecutions = pgTable(
  'feature_executions',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    moduleCode: text('module_code').notNull(),
    recordId: uuid('record_id').notNull(),
    featureId: text('feature_id').notNull(),
    mode: text('mode', { enum: ['local', 'blocked_external', 'outbox'] }).notNull(),
    status: text('status', { enum: ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'BLOCKED'] }).notNull(),
    baseRevision: integer('base_revision').notNull(),
    resultRevision: integer('result_revision'),
    errorCode: text('error_code'),
    createdBy: uuid('created_by').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    completedAt: ts('completed_at'),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);

export const auditEvents = pgTable(
  'audit_events',
  {
    workspaceId: uuid('workspace_id').notNull(),
    id: uuid('id').notNull(),
    actorUserId: uuid('actor_user_id'),
    actor: text('actor').notNull().default('user'),
    action: text('action').notNull(),
    entityType: text('entity_type').notNull(),
    entityId: uuid('entity_id'),
    revision: integer('revision'),
    metadata: jsonb('metadata').notNull().default({}),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.id] })],
);
