import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';
import { CredentialCipher } from './credential-cipher';
import { StoresController } from './stores.controller';
import { StoresRepository } from './stores.repository';
import { StoresService } from './stores.service';

@Module({
  controllers: [StoresController],
  providers: [
    StoresRepository,
    StoresService,
    {
      provide: CredentialCipher,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        CredentialCipher.parse(config.CREDENTIAL_KEYS, config.CREDENTIAL_KEY_ID),
    },
  ],
  exports: [StoresRepository],
})
export class StoresModule {}
