import { Body, Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import type { z } from 'zod';
import { Auth, type AuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
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
  register(@Body(new ZodValidationPipe(registerSchema)) body: z.infer<typeof registerSchema>) {
    return this.auth.register(body.email, body.password, body.workspaceName);
  }

  @Post('login')
  @HttpCode(200)
  @RateLimit('login')
  async login(@Body(new ZodValidationPipe(loginSchema)) body: z.infer<typeof loginSchema>) {
    const session = await this.auth.login(body.email, body.password);
    await this.limits.refundLoginAttempt(body.email); // only failed logins use up the account's budget
    return session;
  }

  @Post('refresh')
  @HttpCode(200)
  refresh(@Body(new ZodValidationPipe(refreshSchema)) body: z.infer<typeof refreshSchema>) {
    return this.auth.refresh(body.refreshToken);
  }

  /** Revokes the session of the bearer token; a stolen copy of its tokens dies with it. */
  @Post('logout')
  @HttpCode(204)
  @UseGuards(AuthGuard)
  async logout(@Auth() auth: AuthContext): Promise<void> {
    await this.auth.logout(auth.sessionId);
  }
}
