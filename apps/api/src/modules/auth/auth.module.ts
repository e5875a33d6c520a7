import { type DynamicModule, Global, Module, type Type } from '@nestjs/common';
import { AuthController } from './auth.controller';
import { AuthGuard } from './auth.guard';
import { AuthRepository } from './auth.repository';
import { AuthService, FIRST_WORKSPACE, type FirstWorkspace } from './auth.service';
import { RateLimitGuard, RateLimits } from './rate-limit.guard';

/**
 * Accounts, sessions and tokens; the guards every route uses (global, API role only: each HTTP
 * module's controllers need them). Registration also creates the first workspace, through the
 * FirstWorkspace given here by the composition root.
 */
@Global()
@Module({})
export class AuthModule {
  static forRoot(firstWorkspace: { module: Type; provider: Type<FirstWorkspace> }): DynamicModule {
    return {
      module: AuthModule,
      imports: [firstWorkspace.module],
      controllers: [AuthController],
      providers: [
        AuthService,
        AuthRepository,
        AuthGuard,
        RateLimits,
        RateLimitGuard,
        { provide: FIRST_WORKSPACE, useExisting: firstWorkspace.provider },
      ],
      // AuthRepository too: Nest builds each controller's guards in the controller's own module.
      exports: [AuthRepository, AuthGuard, RateLimits, RateLimitGuard],
    };
  }
}
