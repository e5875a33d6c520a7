import { Module } from '@nestjs/common';
import { AiTasksController } from './ai-tasks.controller';
import { AiTasksRepository } from './ai-tasks.repository';
import { AiTasksService } from './ai-tasks.service';

@Module({ controllers: [AiTasksController], providers: [AiTasksRepository, AiTasksService] })
export class AiTasksModule {}
