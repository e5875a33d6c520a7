import { Module } from '@nestjs/common';
import { StoresModule } from '../stores/stores.module';
import { StoreProductsController } from './store-products.controller';
import { StoreSyncsController } from './store-syncs.controller';
import { StoreSyncsRepository } from './store-syncs.repository';
import { StoreSyncsService } from './store-syncs.service';

@Module({
  imports: [StoresModule],
  controllers: [StoreSyncsController, StoreProductsController],
  providers: [StoreSyncsRepository, StoreSyncsService],
})
export class StoreSyncsModule {}
