import { Module } from '@nestjs/common';
import { PLATFORM_CONFIG, type PlatformConfig } from '../../config/app-config';
import { PlatformClient } from './platform.client';

/** The marketplace and AI vendor client, for the modules whose jobs call out. */
@Module({
  providers: [
    {
      provide: PlatformClient,
      inject: [PLATFORM_CONFIG],
      useFactory: (config: PlatformConfig) =>
        new PlatformClient(config.PLATFORM_BASE_URL, config.PLATFORM_TIMEOUT_MS),
    },
  ],
  exports: [PlatformClient],
})
export class PlatformModule {}
