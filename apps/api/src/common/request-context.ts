import { createParamDecorator, type ExecutionContext } from '@nestjs/common';

/** Set by AuthGuard on every authenticated request. */
export interface AuthContext {
  userId: string;
  sessionId: string;
  /**
   * The SHA-256 of the caller's access token: what proves "the caller" to the SQL functions that
   * answer for them (sql/024). Never logged or answered.
   */
  accessTokenHash: Buffer;
  /** Present on /v1/workspaces/:workspaceId/... routes once membership is verified. */
  workspaceId?: string;
  role?: 'owner' | 'admin' | 'member';
}

export interface WorkspaceAuthContext extends AuthContext {
  workspaceId: string;
  role: 'owner' | 'admin' | 'member';
}

export const Auth = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthContext => {
  return ctx.switchToHttp().getRequest<{ auth: AuthContext }>().auth;
});

/** The authenticated member's context on a workspace route. */
export const WorkspaceAuth = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): WorkspaceAuthContext => {
    const auth = ctx.switchToHttp().getRequest<{ auth: AuthContext }>().auth;
    if (!auth?.workspaceId || !auth.role) throw new Error('@WorkspaceAuth() on a route without :workspaceId');
    return auth as WorkspaceAuthContext;
  },
);
