import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { RecordKernelService } from './record-kernel.service';
import { RecordsRepository } from './records.repository';

/** The records kernel (head + immutable revisions + feature executions) that drafts build on. */
@Module({
  imports: [AuditModule],
  providers: [RecordKernelService, RecordsRepository],
  exports: [RecordKernelService],
})
export class RecordsModule {}
