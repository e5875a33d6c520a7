import { Body, Controller, HttpCode, Post, Res, UseGuards } from '@nestjs/common';
import type { z } from 'zod';
import { Auth, type AuthContext } from '../../common/request-context';
import { emptyBodySchema } from '../../common/empty-body';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { ApiDoc } from '../../common/api-doc.decorator';
import type { LocationReply } from '../../common/accepted-response';
import { registrationSchema, sessionSchema, tokenPairSchema } from './auth-view';
import { AuthGuard } from './auth.guard';
import { loginSchema, refreshSchema, registerSchema } from './auth.dto';
import { AuthService } from './auth.service';
import { RateLimit, RateLimitGuard, RateLimits } from './rate-limit.guard';

@Controller('v1/auth')
@UseGuards(RateLimitGuard)
@RateLimit('auth')
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    private readonly limits: RateLimits,
  ) {}

  @Post('register')
  @HttpCode(201)
  @ApiDoc({
    summary: 'Create an account, its first workspace and a session (Location: the workspace)',
    problems: ['EMAIL_TAKEN'],
    response: registrationSchema,
  })
  async register(
    @Body(new ZodValidationPipe(registerSchema)) body: z.infer<typeof registerSchema>,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    const registered = await this.auth.register(body.email, body.password, body.workspaceName);
    reply.header('location', `/v1/workspaces/${registered.workspace.id}`);
    return registered;
  }

  @Post('login')
  @HttpCode(200)
  @RateLimit('login')
  @ApiDoc({ summary: 'Start a session', problems: ['INVALID_CREDENTIALS'], response: sessionSchema })
  async login(@Body(new ZodValidationPipe(loginSchema)) body: z.infer<typeof loginSchema>) {
    const session = await this.auth.login(body.email, body.password);
    await this.limits.refundLoginAttempt(body.email); // only failed logins use up the account's budget
    return session;
  }

  @Post('refresh')
  @HttpCode(200)
  @ApiDoc({
    summary: 'Rotate the refresh token; the same token again within the grace period answers the same pair',
    problems: ['INVALID_REFRESH_TOKEN'],
    response: tokenPairSchema,
  })
  refresh(@Body(new ZodValidationPipe(refreshSchema)) body: z.infer<typeof refreshSchema>) {
    return this.auth.refresh(body.refreshToken);
  }

  /** Revokes the session of the bearer token; a stolen copy of its tokens dies with it. */
  @Post('logout')
  @HttpCode(204)
  @UseGuards(AuthGuard)
  @ApiDoc({ summary: "End the caller's session: its access and refresh tokens stop working" })
  async logout(
    @Auth() auth: AuthContext,
    @Body(new ZodValidationPipe(emptyBodySchema)) _body: unknown,
  ): Promise<void> {
    await this.auth.logout(auth.sessionId);
  }
}
