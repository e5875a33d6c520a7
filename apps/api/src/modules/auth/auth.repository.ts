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

/** SQL of users, sessions and tokens (global tables, no RLS). */
@Injectable()
export class AuthRepository {
  constructor(private readonly db: Database) {}

  /**
   * One round trip per request: the access token, its live session and, for workspace routes,
   * the user's role in that workspace (via the narrow SECURITY DEFINER function).
   */
  async authenticate(tokenHash: Buffer, workspaceId: string | null): Promise<Authenticated | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof authAccessTokens>, 'user_id' | 'session_id'> & {
        role: Authenticated['role'];
        first_use: boolean;
      }
    >(sql`
      select t.user_id, t.session_id, app_member_role(t.user_id, ${workspaceId}::uuid) as role,
             t.used_at is null as first_use
        from auth_access_tokens t
        join auth_sessions s on s.id = t.session_id
       where t.token_hash = ${tokenHash} and t.expires_at > now()
         and s.revoked_at is null and s.expires_at > now()`);
    const row = rows[0];
    return row && { userId: row.user_id, sessionId: row.session_id, role: row.role, firstUse: row.first_use };
  }

  /** Records an access token's first use (once: later calls change nothing). */
  async markAccessTokenUsed(tokenHash: Buffer): Promise<void> {
    await this.db.executor.execute(
      sql`update auth_access_tokens set used_at = now() where token_hash = ${tokenHash} and used_at is null`,
    );
  }

  async insertUser(id: string, email: string, passwordHash: string): Promise<boolean> {
    const result = await this.db.executor.execute(sql`
      insert into users (id, email, password_hash) values (${id}, ${email}, ${passwordHash})
      on conflict do nothing`);
    return result.rowCount === 1;
  }

  async findUserByEmail(
    email: string,
  ): Promise<{ id: string; email: string; passwordHash: string } | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof users>, 'id' | 'email' | 'password_hash'>
    >(sql`select id, email, password_hash from users where lower(email) = lower(${email})`);
    const row = rows[0];
    return row && { id: row.id, email: row.email, passwordHash: row.password_hash };
  }

  async insertSession(id: string, userId: string, ttlSeconds: number): Promise<void> {
    await this.db.executor.execute(sql`
      insert into auth_sessions (id, user_id, expires_at)
      values (${id}, ${userId}, now() + make_interval(secs => ${ttlSeconds}))`);
  }

  async insertRefreshToken(sessionId: string, hash: Buffer): Promise<void> {
    await this.db.executor.execute(
      sql`insert into auth_refresh_tokens (token_hash, session_id) values (${hash}, ${sessionId})`,
    );
  }

  async insertAccessToken(
    hash: Buffer,
    sessionId: string,
    userId: string,
    ttlSeconds: number,
  ): Promise<void> {
    await this.db.executor.execute(sql`
      insert into auth_access_tokens (token_hash, session_id, user_id, expires_at)
      values (${hash}, ${sessionId}, ${userId}, now() + make_interval(secs => ${ttlSeconds}))`);
  }

  /** Marks a refresh token used, if it is unused and its session is live. */
  async useRefreshToken(hash: Buffer): Promise<{ sessionId: string; userId: string } | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof authRefreshTokens>, 'session_id'> & Pick<SqlRow<typeof authSessions>, 'user_id'>
    >(sql`
      update auth_refresh_tokens t set used_at = now()
        from auth_sessions s
       where t.token_hash = ${hash} and t.used_at is null
         and s.id = t.session_id and s.revoked_at is null and s.expires_at > now()
      returning t.session_id, s.user_id`);
    const row = rows[0];
    return row && { sessionId: row.session_id, userId: row.user_id };
  }

  /** A refresh token, and how many seconds ago it was used (null while unused). */
  async findRefreshToken(
    hash: Buffer,
  ): Promise<{ sessionId: string; used: boolean; usedSecondsAgo: number | null } | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof authRefreshTokens>, 'session_id'> & { used_seconds_ago: number | null }
    >(sql`
      select session_id, extract(epoch from now() - used_at)::float8 as used_seconds_ago
        from auth_refresh_tokens where token_hash = ${hash}`);
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
    const { rows } = await this.db.executor.execute(sql`
      select 1
        from auth_refresh_tokens r
        join auth_access_tokens a on a.token_hash = ${accessHash} and a.session_id = r.session_id
        join auth_sessions s on s.id = r.session_id
       where r.token_hash = ${refreshHash} and r.session_id = ${sessionId} and r.used_at is null
         and a.used_at is null and a.expires_at > now()
         and s.revoked_at is null and s.expires_at > now()
         for update of r`);
    return rows.length === 1;
  }

  /** Revokes a session and drops its access tokens at once. */
  async revokeSession(sessionId: string): Promise<void> {
    await this.db.executor.execute(
      sql`update auth_sessions set revoked_at = now() where id = ${sessionId} and revoked_at is null`,
    );
    await this.db.executor.execute(sql`delete from auth_access_tokens where session_id = ${sessionId}`);
  }
}
