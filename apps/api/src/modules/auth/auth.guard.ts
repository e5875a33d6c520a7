import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { UnauthenticatedError } from '../../common/domain-errors';
import { WorkspaceNotFoundError } from './auth.errors';
import type { AuthContext } from '../../common/request-context';
import { AuthRepository } from './auth.repository';
import { hashToken } from './opaque-token';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Bearer authentication and, on /v1/workspaces/:workspaceId/... routes, membership: one query.
 * A non-member gets 404, so workspace ids cannot be probed.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(private readonly repository: AuthRepository) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<{
      headers: Record<string, string | string[] | undefined>;
      params?: Record<string, string>;
      auth?: AuthContext;
    }>();
    // A raw upload's caller was authenticated before its body was read (request-body.parsers.ts).
    request.auth ??= await this.authenticate(
      request.headers.authorization,
      request.params?.workspaceId ?? null,
    );
    return true;
  }

  /** The caller of a request, or the typed refusal (401; 404 for a workspace it is no member of). */
  async authenticate(
    header: string | string[] | undefined,
    workspaceId: string | null,
  ): Promise<AuthContext> {
    // The scheme name is case-insensitive (RFC 9110 §11.1); the token is ours: exact.
    const match = typeof header === 'string' ? /^bearer +([A-Za-z0-9_-]{20,200}) *$/i.exec(header) : null;
    if (!match) throw new UnauthenticatedError();
    if (workspaceId !== null && !UUID_RE.test(workspaceId)) throw new WorkspaceNotFoundError();
    const tokenHash = hashToken(match[1]!);
    const found = await this.repository.authenticate(tokenHash, workspaceId);
    if (!found) throw new UnauthenticatedError();
    // Once per token: a refresh replayed later must know the pair it answered is in use.
    if (found.firstUse) await this.repository.markAccessTokenUsed(tokenHash);
    if (workspaceId !== null && !found.role) throw new WorkspaceNotFoundError();
    return {
      userId: found.userId,
      sessionId: found.sessionId,
      accessTokenHash: tokenHash,
      ...(workspaceId !== null ? { workspaceId: workspaceId.toLowerCase(), role: found.role! } : {}),
    };
  }
}
