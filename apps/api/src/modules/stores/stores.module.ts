import { Module } from '@nestjs/common';
import { DeclareJobs } from '@listing/outbox';
import { PLATFORM_CONFIG, type PlatformConfig } from '../../config/app-config';
import { AuditModule } from '../audit/audit.module';
import { OperationsModule } from '../operations/operations.module';
import { PlatformModule } from '../platform/platform.module';
import { CredentialCipher } from './credential-cipher';
import { StoreAccess } from './store-access.service';
import { checkStoreCredentialsJob, StoreCredentialCheckJob } from './store-credential-check.job';
import { StoreVerificationJob, verifyStoreCredentialsJob } from './store-verification.job';
import { StoresRepository } from './stores.repository';

/** Stores on marketplaces: their credentials (encrypted at rest), their verification and checks. */
@DeclareJobs(verifyStoreCredentialsJob, checkStoreCredentialsJob)
@Module({
  imports: [PlatformModule, OperationsModule, AuditModule],
  providers: [
    StoresRepository,
    StoreAccess,
    StoreVerificationJob,
    StoreCredentialCheckJob,
    {
      provide: CredentialCipher,
      inject: [PLATFORM_CONFIG],
      useFactory: (config: PlatformConfig) =>
        CredentialCipher.parse(config.CREDENTIAL_KEYS, config.CREDENTIAL_KEY_ID),
    },
  ],
  exports: [StoreAccess, StoresRepository, CredentialCipher],
})
export class StoresModule {}
