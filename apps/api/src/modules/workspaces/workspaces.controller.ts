import { Body, Controller, Get, HttpCode, Post, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import {
  Auth,
  WorkspaceAuth,
  type AuthContext,
  type WorkspaceAuthContext,
} from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { ApiDoc } from '../../ops/openapi/api-doc.decorator';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { WorkspacesService } from './workspaces.service';

const createWorkspaceSchema = z.strictObject({ name: z.string().trim().min(1).max(100) });
const addMemberSchema = z.strictObject({
  email: z.email(),
  role: z.enum(['admin', 'member']).default('member'),
});

@Controller('v1/workspaces')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class WorkspacesController {
  constructor(private readonly workspaces: WorkspacesService) {}

  @Get()
  async list(@Auth() auth: AuthContext) {
    return { items: await this.workspaces.list(auth.userId) };
  }

  @Post()
  @HttpCode(201)
  create(
    @Auth() auth: AuthContext,
    @Body(new ZodValidationPipe(createWorkspaceSchema)) body: z.infer<typeof createWorkspaceSchema>,
  ) {
    return this.workspaces.create(auth.userId, body.name);
  }

  @Post(':workspaceId/members')
  @HttpCode(201)
  @ApiDoc({ summary: 'Add a registered user to the workspace', problems: ['FORBIDDEN', 'MEMBER_EXISTS'] })
  addMember(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Body(new ZodValidationPipe(addMemberSchema)) body: z.infer<typeof addMemberSchema>,
  ) {
    return this.workspaces.addMember(auth, body.email, body.role);
  }
}
