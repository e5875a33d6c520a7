import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { OutboxWriterModule } from '../outbox-writer/outbox-writer.module';
import { AsyncCommands } from './async-commands.service';
import { OperationProgress } from './operation-progress.service';
import { OperationsRepository } from './operations.repository';

/**
 * Operations (the 202 + polling resource): AsyncCommands for the commands that start one,
 * OperationProgress for the jobs that finish one.
 */
@Module({
  imports: [AuditModule, OutboxWriterModule],
  providers: [OperationsRepository, AsyncCommands, OperationProgress],
  exports: [OperationsRepository, AsyncCommands, OperationProgress],
})
export class OperationsModule {}
