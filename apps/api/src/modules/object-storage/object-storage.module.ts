import { Module } from '@nestjs/common';
import { loadMediaConfig, MEDIA_CONFIG, type MediaConfig } from '../../config/media-config';
import { LocalDirectoryObjectStorage } from './local-directory-object-storage';
import { OBJECT_STORAGE } from './object-storage.client';

/**
 * Object storage and the media configuration (limits, allowlist), for the modules that read and
 * write objects. The configuration comes from the environment (not the role's config object)
 * because the API and the worker read the same variables.
 */
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
