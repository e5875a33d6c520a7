import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { InvitationsRepository } from './invitations.repository';
import { MembersRepository } from './members.repository';
import { InvitationsController, WorkspacesController } from './workspaces.controller';
import { WorkspacesRepository } from './workspaces.repository';
import { WorkspacesService } from './workspaces.service';

/** Workspaces, members and invitations (API role only). The auth guards come from AuthModule. */
@Module({
  imports: [AuditModule],
  controllers: [WorkspacesController, InvitationsController],
  providers: [WorkspacesService, WorkspacesRepository, InvitationsRepository, MembersRepository],
  exports: [WorkspacesService],
})
export class WorkspacesModule {}
