import { Global, Module } from '@nestjs/common';
import { loadMediaConfig, MEDIA_CONFIG, type MediaConfig } from '../../config/media-config';
import { LocalDirectoryObjectStorage } from './local-directory-object-storage';
import { OBJECT_STORAGE } from './object-storage';

/**
 * Object storage and the media configuration for the API process. The configuration comes from
 * the environment (not AppConfig) because the worker process reads the same variables.
 */
@Global()
@Module({
  providers: [
    { provide: MEDIA_CONFIG, useFactory: () => loadMediaConfig() },
    {
      provide: OBJECT_STORAGE,
      inject: [MEDIA_CONFIG],
      useFactory: (config: MediaConfig) => new LocalDirectoryObjectStorage(config.OBJECT_STORAGE_DIR),
    },
  ],
  exports: [MEDIA_CONFIG, OBJECT_STORAGE],
})
export class ObjectStorageModule {}
