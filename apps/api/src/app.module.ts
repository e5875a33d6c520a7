import { type DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from './config/app-config';
import { InfrastructureModule } from './infrastructure/infrastructure.module';
import { AiTasksModule } from './modules/ai-tasks/ai-tasks.module';
import { StoreSyncsModule } from './modules/store-syncs/store-syncs.module';
import { AuthModule } from './modules/auth/auth.module';
import { MaterialTransfersModule } from './modules/material-transfers/material-transfers.module';
import { MediaModule } from './modules/media/media.module';
import { ObjectStorageModule } from './modules/object-storage/object-storage.module';
import { HealthModule } from './modules/health/health.module';
import { IdempotencyModule } from './modules/idempotency/idempotency.module';
import { OperationsModule } from './modules/operations/operations.module';
import { OutboxWriterModule } from './modules/outbox-writer/outbox-writer.module';
import { ProductDraftsModule } from './modules/product-drafts/product-drafts.module';
import { RecordsModule } from './modules/records/records.module';
import { PublicationsModule } from './modules/publications/publications.module';
import { StoresModule } from './modules/stores/stores.module';
import { WorkspacesModule } from './modules/workspaces/workspaces.module';
import { OpsModule } from './ops/ops.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        InfrastructureModule.forRoot(config),
        OpsModule,
        IdempotencyModule,
        OutboxWriterModule,
        OperationsModule,
        HealthModule,
        AuthModule,
        WorkspacesModule,
        RecordsModule,
        ProductDraftsModule,
        StoresModule,
        PublicationsModule,
        StoreSyncsModule,
        AiTasksModule,
        ObjectStorageModule,
        MediaModule,
        MaterialTransfersModule,
      ],
    };
  }
}
