import { Global, Module } from '@nestjs/common';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { AuthController } from './auth.controller';
import { AuthGuard } from './auth.guard';
import { AuthRepository } from './auth.repository';
import { AuthService } from './auth.service';
import { RateLimitGuard, RateLimits } from './rate-limit.guard';

@Global()
@Module({
  imports: [WorkspacesModule],
  controllers: [AuthController],
  providers: [AuthService, AuthRepository, AuthGuard, RateLimits, RateLimitGuard],
  exports: [AuthRepository, AuthGuard, RateLimits, RateLimitGuard],
})
export class AuthModule {}
