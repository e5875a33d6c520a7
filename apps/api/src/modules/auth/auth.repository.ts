import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { authAccessTokens, authRefreshTokens, authSessions, sql, users, type SqlRow } from '@listing/db';

export interface Authenticated {
  userId: string;
  sessionId: string;
  role: 'owner' | 'admin' | 'member' | null;
  /** This is the token's first use (it has no used_at yet). */
  firstUse: boolean;
}

/**
 * Users, sessions and tokens. app_user cannot read these tables (sql/024): every step goes through
 * its own SECURITY DEFINER function, none of which lists rows.
 */
@Injectable()
export class AuthRepository {
  constructor(private readonly db: Database) {}

  /**
   * One round trip per request: the access token, its live session and, for workspace routes,
   * the user's role in that workspace. Every request makes it, so it is a named prepared
   * statement (Database.prepared): parsed once per connection, not on every call.
   */
  async authenticate(tokenHash: Buffer, workspaceId: string | null): Promise<Authenticated | undefined> {
    const rows = await this.db.prepared<
      Pick<SqlRow<typeof authAccessTokens>, 'user_id' | 'session_id'> & {
        role: Authenticated['role'];
        first_use: boolean;
      }
    >(
      'auth_authenticate',
      'select user_id, session_id, role, first_use from app_authenticate($1, $2::uuid)',
      [tokenHash, workspaceId],
    );
    const row = rows[0];
    return row && { userId: row.user_id, sessionId: row.session_id, role: row.role, firstUse: row.first_use };
  }

  /** Records an access token's first use (once: later calls change nothing). */
  async markAccessTokenUsed(tokenHash: Buffer): Promise<void> {
    await this.db.executor.execute(sql`select app_mark_access_token_used(${tokenHash})`);
  }

  async insertUser(id: string, email: string, passwordHash: string): Promise<boolean> {
    const { rows } = await this.db.executor.execute<{ inserted: boolean }>(
      sql`select app_insert_user(${id}, ${email}, ${passwordHash}) as inserted`,
    );
    return rows[0]?.inserted === true;
  }

  async findUserByEmail(
    email: string,
  ): Promise<{ id: string; email: string; passwordHash: string } | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof users>, 'id' | 'email' | 'password_hash'>
    >(sql`select id, email, password_hash from app_login_lookup(${email})`);
    const row = rows[0];
    return row && { id: row.id, email: row.email, passwordHash: row.password_hash };
  }

  async insertSession(id: string, userId: string, ttlSeconds: number): Promise<void> {
    await this.db.executor.execute(sql`select app_insert_session(${id}, ${userId}, ${ttlSeconds}::int)`);
  }

  async insertRefreshToken(sessionId: string, hash: Buffer): Promise<void> {
    await this.db.executor.execute(sql`select app_insert_refresh_token(${sessionId}, ${hash})`);
  }

  /** An access token of the session's user (the session names the user). */
  async insertAccessToken(hash: Buffer, sessionId: string, ttlSeconds: number): Promise<void> {
    await this.db.executor.execute(
      sql`select app_insert_access_token(${hash}, ${sessionId}, ${ttlSeconds}::int)`,
    );
  }

  /** Marks a refresh token used, if it is unused and its session is live. */
  async useRefreshToken(hash: Buffer): Promise<{ sessionId: string; userId: string } | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof authRefreshTokens>, 'session_id'> & Pick<SqlRow<typeof authSessions>, 'user_id'>
    >(sql`select session_id, user_id from app_use_refresh_token(${hash})`);
    const row = rows[0];
    return row && { sessionId: row.session_id, userId: row.user_id };
  }

  /** A refresh token, and how many seconds ago it was used (null while unused). */
  async findRefreshToken(
    hash: Buffer,
  ): Promise<{ sessionId: string; used: boolean; usedSecondsAgo: number | null } | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof authRefreshTokens>, 'session_id'> & { used_seconds_ago: number | null }
    >(sql`select session_id, used_seconds_ago from app_find_refresh_token(${hash})`);
    const row = rows[0];
    return (
      row && {
        sessionId: row.session_id,
        used: row.used_seconds_ago !== null,
        usedSecondsAgo: row.used_seconds_ago,
      }
    );
  }

  /**
   * Whether the pair a rotation issued is still untouched: its refresh token unused, its access
   * token never presented and not expired, its session live. Locks the refresh row, so of two
   * concurrent replays and a first use of the pair one order holds.
   */
  async successorUnused(sessionId: string, refreshHash: Buffer, accessHash: Buffer): Promise<boolean> {
    const { rows } = await this.db.executor.execute<{ unused: boolean }>(
      sql`select app_successor_unused(${sessionId}, ${refreshHash}, ${accessHash}) as unused`,
    );
    return rows[0]?.unused === true;
  }

  /** Revokes a session and drops its access tokens at once. */
  async revokeSession(sessionId: string): Promise<void> {
    await this.db.executor.execute(sql`select app_revoke_session(${sessionId})`);
  }
}
