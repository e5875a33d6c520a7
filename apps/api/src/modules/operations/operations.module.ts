import { Global, Module } from '@nestjs/common';
import { AsyncCommands } from './async-commands.service';
import { OperationsController } from './operations.controller';
import { OperationsRepository } from './operations.repository';

@Global()
@Module({
  controllers: [OperationsController],
  providers: [OperationsRepository, AsyncCommands],
  exports: [OperationsRepository, AsyncCommands],
})
export class OperationsModule {}
