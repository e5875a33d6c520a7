import { Module } from '@nestjs/common';
import { OperationsModule } from '../operations/operations.module';
import { StoresModule } from '../stores/stores.module';
import { StoreProductsController } from './store-products.controller';
import { StoreSyncsController } from './store-syncs.controller';
import { StoreSyncsModule } from './store-syncs.module';
import { StoreSyncsService } from './store-syncs.service';

/** The store sync and store product routes (API role only). */
@Module({
  imports: [StoreSyncsModule, StoresModule, OperationsModule],
  controllers: [StoreSyncsController, StoreProductsController],
  providers: [StoreSyncsService],
})
export class StoreSyncsHttpModule {}
