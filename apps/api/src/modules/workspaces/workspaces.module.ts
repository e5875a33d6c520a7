import { Module } from '@nestjs/common';
import { AuthRepository } from '../auth/auth.repository';
import { WorkspacesController } from './workspaces.controller';
import { WorkspacesRepository } from './workspaces.repository';
import { WorkspacesService } from './workspaces.service';

@Module({
  controllers: [WorkspacesController],
  providers: [WorkspacesService, WorkspacesRepository, AuthRepository],
  exports: [WorkspacesService],
})
export class WorkspacesModule {}
