import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';
import { EmailTakenError, InvalidCredentialsError, InvalidRefreshTokenError } from './auth.errors';
import { AuthRepository } from './auth.repository';
import { ACCESS_PREFIX, REFRESH_PREFIX, hashToken, newToken, successorTokens } from './opaque-token';
import { PasswordHasher } from './password-hasher';
import type { z } from 'zod';
import type { registeredWorkspaceSchema, TokenPair } from './auth-view';

/**
 * Creates a new account's first workspace in the registration's transaction. Workspaces
 * implements it; the composition root wires it (AuthModule.forRoot), so auth never imports the
 * module that builds on it.
 */
export interface FirstWorkspace {
  create(
    ownerUserId: string,
    name: string,
  ): Promise<{ workspace: z.output<typeof registeredWorkspaceSchema> }>;
}
export const FIRST_WORKSPACE = Symbol('FIRST_WORKSPACE');

/**
 * Registration, login and refresh. These endpoints do not use the idempotency mechanism (the
 * design forbids storing password-bearing bodies anywhere); they are rate limited instead.
 */
@Injectable()
export class AuthService {
  private readonly hasher: PasswordHasher;

  constructor(
    private readonly db: Database,
    private readonly repository: AuthRepository,
    @Inject(FIRST_WORKSPACE) private readonly workspaces: FirstWorkspace,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.hasher = new PasswordHasher(config.AUTH_SCRYPT_LOG_N);
  }

  async register(email: string, password: string, workspaceName: string) {
    const passwordHash = await this.hasher.hash(password);
    const userId = randomUUID();
    return this.db.transaction(async () => {
      if (!(await this.repository.insertUser(userId, email, passwordHash))) throw new EmailTakenError();
      const { workspace } = await this.workspaces.create(userId, workspaceName);
      const tokens = await this.issueSession(userId);
      return { user: { id: userId, email }, workspace, ...tokens };
    });
  }

  async login(email: string, password: string): Promise<TokenPair & { user: { id: string; email: string } }> {
    const user = await this.repository.findUserByEmail(email);
    if (!user) {
      await this.hasher.dummyVerify(password);
      throw new InvalidCredentialsError();
    }
    if (!(await this.hasher.verify(password, user.passwordHash))) throw new InvalidCredentialsError();
    const tokens = await this.db.transaction(() => this.issueSession(user.id));
    return { user: { id: user.id, email: user.email }, ...tokens };
  }

  /**
   * Rotates the refresh token. The same token presented again within AUTH_REFRESH_GRACE_SECONDS,
   * while the pair it got is untouched, answers that pair again: the client lost the answer and
   * retried. Otherwise a used token presented again means a copy leaked: the session is revoked
   * (committed) and the request refused.
   */
  async refresh(refreshToken: string): Promise<TokenPair> {
    const hash = hashToken(refreshToken);
    const outcome = await this.db.transaction(async () => {
      const used = await this.repository.useRefreshToken(hash);
      if (used) return { tokens: await this.issueSuccessor(used.sessionId, refreshToken) };
      const known = await this.repository.findRefreshToken(hash);
      if (!known?.used) return { tokens: undefined };
      if (known.usedSecondsAgo! <= this.config.AUTH_REFRESH_GRACE_SECONDS) {
        const pair = successorTokens(this.config.AUTH_REFRESH_KEY, refreshToken);
        if (await this.repository.successorUnused(known.sessionId, pair.refresh.hash, pair.access.hash)) {
          return { tokens: this.tokenPair(pair.access.token, pair.refresh.token) };
        }
      }
      await this.repository.revokeSession(known.sessionId);
      return { tokens: undefined };
    });
    if (!outcome.tokens) throw new InvalidRefreshTokenError();
    return outcome.tokens;
  }

  /** Ends the caller's session: its access tokens stop working at once, its refresh token too. */
  async logout(sessionId: string): Promise<void> {
    await this.db.transaction(() => this.repository.revokeSession(sessionId));
  }

  private async issueSession(userId: string): Promise<TokenPair> {
    const sessionId = randomUUID();
    await this.repository.insertSession(sessionId, userId, this.config.REFRESH_TOKEN_TTL_SECONDS);
    return this.issueTokens(sessionId);
  }

  private issueTokens(sessionId: string): Promise<TokenPair> {
    return this.storeTokens(sessionId, newToken(ACCESS_PREFIX), newToken(REFRESH_PREFIX));
  }

  /** A rotation's pair, derived from the token it consumed (see successorTokens). */
  private issueSuccessor(sessionId: string, usedRefreshToken: string): Promise<TokenPair> {
    const pair = successorTokens(this.config.AUTH_REFRESH_KEY, usedRefreshToken);
    return this.storeTokens(sessionId, pair.access, pair.refresh);
  }

  private async storeTokens(
    sessionId: string,
    access: { token: string; hash: Buffer },
    refresh: { token: string; hash: Buffer },
  ): Promise<TokenPair> {
    await this.repository.insertAccessToken(access.hash, sessionId, this.config.ACCESS_TOKEN_TTL_SECONDS);
    await this.repository.insertRefreshToken(sessionId, refresh.hash);
    return this.tokenPair(access.token, refresh.token);
  }

  private tokenPair(accessToken: string, refreshToken: string): TokenPair {
    return {
      accessToken,
      refreshToken,
      tokenType: 'Bearer',
      expiresIn: this.config.ACCESS_TOKEN_TTL_SECONDS,
    };
  }
}
