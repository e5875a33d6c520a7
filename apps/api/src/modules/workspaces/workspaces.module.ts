import { AuditRepository } from '../audit/audit.repository';
import { Module } from '@nestjs/common';
import { AuthRepository } from '../auth/auth.repository';
import { InvitationsRepository } from './invitations.repository';
import { InvitationsController, WorkspacesController } from './workspaces.controller';
import { WorkspacesRepository } from './workspaces.repository';
import { WorkspacesService } from './workspaces.service';

@Module({
  controllers: [WorkspacesController, InvitationsController],
  providers: [
    WorkspacesService,
    WorkspacesRepository,
    InvitationsRepository,
    AuthRepository,
    AuditRepository,
  ],
  exports: [WorkspacesService],
})
export class WorkspacesModule {}
