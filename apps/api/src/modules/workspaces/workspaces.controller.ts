import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import {
  Auth,
  WorkspaceAuth,
  type AuthContext,
  type WorkspaceAuthContext,
} from '../../common/request-context';
import {
  Idempotent,
  IdempotencyRequest,
  IdempotentResponse,
  type IdempotentRequestContext,
} from '@listing/idempotency';
import { InvitationNotFoundError } from './workspaces.errors';
import { ParseIdPipe } from '../../common/http-params';
import { pageQuerySchema, type PageQuery } from '../../common/page-query';
import { emptyBodySchema } from '../../common/empty-body';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { ApiDoc } from '../../common/api-doc.decorator';
import type { LocationReply } from '../../common/accepted-response';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { WorkspacesService } from './workspaces.service';
import {
  invitationPageSchema,
  invitationSchema,
  memberPageSchema,
  receivedInvitationListSchema,
  workspaceMembershipListSchema,
  workspaceMembershipSchema,
  workspaceViewSchema,
} from './workspace-view';

const createWorkspaceSchema = z.strictObject({ name: z.string().trim().min(1).max(100) });
const addMemberSchema = z.strictObject({
  email: z.email().max(254), // as registration allows (RFC 5321 path limit)
  role: z.enum(['admin', 'member']).default('member'),
});

@Controller('v1/workspaces')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class WorkspacesController {
  constructor(private readonly workspaces: WorkspacesService) {}

  @Get()
  @ApiDoc({
    summary: "The caller's workspaces with their role in each",
    response: workspaceMembershipListSchema,
  })
  async list(@Auth() auth: AuthContext) {
    return { items: await this.workspaces.list(auth) };
  }

  /** An Idempotency-Key is honoured when sent (WorkspacesService.create: a derived id, not a record). */
  @Post()
  @HttpCode(201)
  @Idempotent({ required: false })
  @ApiDoc({ summary: 'Create a workspace owned by the caller', response: workspaceMembershipSchema })
  async create(
    @Auth() auth: AuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Body(new ZodValidationPipe(createWorkspaceSchema)) body: z.infer<typeof createWorkspaceSchema>,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    if (idem.keyError) throw idem.keyError; // after validation, as runPrepared would
    const created = await this.workspaces.create(auth.userId, body.name, idem.key);
    reply.header('location', `/v1/workspaces/${created.workspace.id}`);
    return new IdempotentResponse(created.workspace, created.replayed);
  }

  @Get(':workspaceId')
  @ApiDoc({
    summary: "The workspace (id, name, createdAt) and the caller's role in it",
    response: workspaceViewSchema,
  })
  get(@WorkspaceAuth() auth: WorkspaceAuthContext) {
    return this.workspaces.getWorkspace(auth);
  }

  @Get(':workspaceId/members')
  @ApiDoc({
    summary: "The workspace's members with their roles, newest first (userId, email, role, joinedAt)",
    response: memberPageSchema,
  })
  members(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.workspaces.listMembers(auth, query);
  }

  @Get(':workspaceId/invitations')
  @ApiDoc({
    summary: 'The pending (open, unexpired) invitations, newest first: owners and admins only',
    problems: ['FORBIDDEN'],
    response: invitationPageSchema,
  })
  invitations(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.workspaces.listPendingInvitations(auth, query);
  }

  @Post(':workspaceId/members')
  @HttpCode(201)
  @ApiDoc({
    summary: 'Invite an email to the workspace (the same answer whether or not it is registered)',
    problems: ['FORBIDDEN', 'MEMBER_EXISTS'],
    response: invitationSchema,
  })
  async invite(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Body(new ZodValidationPipe(addMemberSchema)) body: z.infer<typeof addMemberSchema>,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    const invitation = await this.workspaces.invite(auth, body.email, body.role);
    reply.header('location', `/v1/workspaces/${auth.workspaceId}/invitations/${invitation.id}`);
    return invitation;
  }

  @Get(':workspaceId/invitations/:invitationId')
  @ApiDoc({
    summary: 'One open invitation: owners and admins only',
    problems: ['FORBIDDEN', 'INVITATION_NOT_FOUND'],
    response: invitationSchema,
  })
  invitation(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('invitationId', new ParseIdPipe(() => new InvitationNotFoundError())) id: string,
  ) {
    return this.workspaces.getPendingInvitation(auth, id);
  }

  @Delete(':workspaceId/invitations/:invitationId')
  @HttpCode(204)
  @ApiDoc({ summary: 'Withdraw an open invitation', problems: ['FORBIDDEN', 'INVITATION_NOT_FOUND'] })
  async withdraw(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('invitationId', new ParseIdPipe(() => new InvitationNotFoundError())) id: string,
    @Body(new ZodValidationPipe(emptyBodySchema)) _body: unknown,
  ) {
    await this.workspaces.withdraw(auth, id);
  }
}

/** Invitations addressed to the caller's account. */
@Controller('v1/invitations')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class InvitationsController {
  constructor(private readonly workspaces: WorkspacesService) {}

  @Get()
  @ApiDoc({ summary: 'Open invitations addressed to the caller', response: receivedInvitationListSchema })
  async list(@Auth() auth: AuthContext) {
    return { items: await this.workspaces.receivedInvitations(auth) };
  }

  @Post(':invitationId/accept')
  @HttpCode(200)
  @ApiDoc({
    summary: 'Accept an invitation: become a member (the workspace and the role it gave)',
    problems: ['INVITATION_NOT_FOUND'],
    response: workspaceMembershipSchema,
  })
  accept(
    @Auth() auth: AuthContext,
    @Param('invitationId', new ParseIdPipe(() => new InvitationNotFoundError())) id: string,
    @Body(new ZodValidationPipe(emptyBodySchema)) _body: unknown,
  ) {
    return this.workspaces.accept(auth, id);
  }

  @Post(':invitationId/decline')
  @HttpCode(204)
  @ApiDoc({ summary: 'Decline an invitation', problems: ['INVITATION_NOT_FOUND'] })
  async decline(
    @Auth() auth: AuthContext,
    @Param('invitationId', new ParseIdPipe(() => new InvitationNotFoundError())) id: string,
    @Body(new ZodValidationPipe(emptyBodySchema)) _body: unknown,
  ) {
    await this.workspaces.decline(auth, id);
  }
}
