import { Module } from '@nestjs/common';
import { OperationsController } from './operations.controller';
import { OperationsModule } from './operations.module';

/** The operations routes (API role only). */
@Module({ imports: [OperationsModule], controllers: [OperationsController] })
export class OperationsHttpModule {}
