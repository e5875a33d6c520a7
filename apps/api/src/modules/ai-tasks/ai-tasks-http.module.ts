import { Module } from '@nestjs/common';
import { OperationsModule } from '../operations/operations.module';
import { RecordsModule } from '../records/records.module';
import { AiTasksController } from './ai-tasks.controller';
import { AiTasksModule } from './ai-tasks.module';
import { AiTasksService } from './ai-tasks.service';

/** The AI task routes (API role only). */
@Module({
  imports: [AiTasksModule, RecordsModule, OperationsModule],
  controllers: [AiTasksController],
  providers: [AiTasksService],
})
export class AiTasksHttpModule {}
