import { Module } from '@nestjs/common';
import { DeclareJobs } from '@listing/outbox';
import { AuditModule } from '../audit/audit.module';
import { OperationsModule } from '../operations/operations.module';
import { PlatformModule } from '../platform/platform.module';
import { RecordsModule } from '../records/records.module';
import { AiTaskJob, runAiTaskJob } from './ai-task.job';
import { AiTasksRepository } from './ai-tasks.repository';

/** AI tasks on product drafts: the vendor call, and its result applied as a new revision. */
@DeclareJobs(runAiTaskJob)
@Module({
  imports: [RecordsModule, PlatformModule, OperationsModule, AuditModule],
  providers: [AiTasksRepository, AiTaskJob],
  exports: [AiTasksRepository],
})
export class AiTasksModule {}
