import { sql } from 'drizzle-orm';
import { customType, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/** Mirrors sql/001_foundation.sql and later changes to its tables. The SQL files are the source of
 * truth; packages/db/test/schema.integration-spec.ts fails when the two drift. */

export const bytea = customType<{ data: Buffer; driverData: Buffer }>({
  dataType: () => 'bytea',
});

const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();

export const users = pgTable('users', {
  id: uuid('id').primaryKey(),
  email: text('email').notNull(),
  passwordHash: text('password_hash').notNull(),
  createdAt: createdAt(),
});

export const authSessions = pgTable('auth_sessions', {
  id: uuid('id').primaryKey(),
  userId: uuid('user_id').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  revokedAt: timestamp('revoked_at', { withTimezone: true }),
  createdAt: createdAt(),
});

export const authRefreshTokens = pgTable('auth_refresh_tokens', {
  tokenHash: bytea('token_hash').primaryKey(),
  sessionId: uuid('session_id').notNull(),
  usedAt: timestamp('used_at', { withTimezone: true }),
  createdAt: createdAt(),
});

export const authAccessTokens = pgTable('auth_access_tokens', {
  tokenHash: bytea('token_hash').primaryKey(),
  sessionId: uuid('session_id').notNull(),
  userId: uuid('user_id').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  createdAt: createdAt(),
  /** The first request that presented it (sql/020): a refresh replay is answered only before. */
  usedAt: timestamp('used_at', { withTimezone: true }),
});

export const workspaces = pgTable('workspaces', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull(),
  createdBy: uuid('created_by').notNull(),
  createdAt: createdAt(),
});

export const workspaceMembers = pgTable(
  'workspace_members',
  {
    workspaceId: uuid('workspace_id').notNull(),
    userId: uuid('user_id').notNull(),
    role: text('role', { enum: ['owner', 'admin', 'member'] }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.userId] })],
);

export const idempotencyRequests = pgTable(
  'idempotency_requests',
  {
    workspaceId: uuid('workspace_id').notNull(),
    userId: uuid('user_id').notNull(),
    idempotencyKey: uuid('idempotency_key').notNull(),
    operation: text('operation').notNull(),
    fingerprint: bytea('fingerprint').notNull(),
    fingerprintKeyId: text('fingerprint_key_id').notNull(),
    status: text('status', { enum: ['PROCESSING', 'SUCCEEDED'] }).notNull(),
    responseStatus: integer('response_status'),
    responseEnvelope: jsonb('response_envelope'),
    createdAt: createdAt(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.userId, t.idempotencyKey] })],
);

export const outboxStatuses = ['pending', 'dispatching', 'dispatched', 'dead_letter'] as const;
export type OutboxStatus = (typeof outboxStatuses)[number];

export const outboxEvents = pgTable('outbox_events', {
  id: uuid('id').primaryKey(),
  workspaceId: uuid('workspace_id').notNull(),
  queue: text('queue').notNull(),
  eventType: text('event_type').notNull(),
  payload: jsonb('payload').notNull(),
  status: text('status', { enum: outboxStatuses }).notNull().default('pending'),
  attemptCount: integer('attempt_count').notNull().default(0),
  maxAttempts: integer('max_attempts').notNull().default(10),
  nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true })
    .notNull()
    .default(sql`now()`),
  lockedBy: text('locked_by'),
  lockedUntil: timestamp('locked_until', { withTimezone: true }),
  lastError: text('last_error'),
  createdAt: createdAt(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  dispatchedAt: timestamp('dispatched_at', { withTimezone: true }),
  /** When a worker ran the job's dead-letter reaction (sql/015). */
  deadLetterHandledAt: timestamp('dead_letter_handled_at', { withTimezone: true }),
  /**
   * W3C trace context of the request that appended the event (sql/023), null when nothing was
   * traced: delivery metadata for the dispatcher's send span, never part of the payload.
   */
  traceparent: text('traceparent'),
  tracestate: text('tracestate'),
});
