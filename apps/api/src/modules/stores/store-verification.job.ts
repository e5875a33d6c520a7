import type { Database } from '@listing/db';
import { defineJob, OnOutboxDeadLetter, OutboxHandler, type JobContext } from '@listing/outbox';
import { z } from 'zod';
import { AuditRepository } from '../audit/audit.repository';
import { OperationsRepository } from '../operations/operations.repository';
import { ABANDONED, PermanentJobError, permanentFailure, type SafeError } from '../platform/job-failures';
import type { PlatformClient } from '../platform/platform.client';
import { CredentialDecryptError, type CredentialCipher } from './credential-cipher';
import type { StoreStatus } from './store-view';
import { StoresRepository } from './stores.repository';

/**
 * Verifies one credential version of a store at the marketplace. The payload holds ids and the
 * version only (`version` = the store's credential version this job verifies).
 */
export const verifyStoreCredentialsJob = defineJob({
  name: 'store.verify-credentials',
  queue: 'stores',
  schema: z.object({ storeId: z.uuid(), version: z.number().int().positive(), operationId: z.uuid() }),
  // Re-entrant by conditional transitions (version + status); the check itself has no side effect.
  // The marketplace call must not sit in a transaction: the handler opens short ones around it.
  inbox: false,
  transaction: false,
});

const SUPERSEDED: SafeError = {
  code: 'CREDENTIALS_SUPERSEDED',
  message: 'the credentials were replaced before they could be verified',
};
const INVALID: SafeError = {
  code: 'STORE_CREDENTIALS_INVALID',
  message: 'the marketplace rejected the store credentials',
};
const GONE: SafeError = { code: 'RESOURCE_GONE', message: 'the store no longer exists' };
const NO_VERDICT: SafeError = {
  code: 'STORE_VERIFICATION_FAILED',
  message: 'the credentials could not be verified; replace them to try again',
};

/**
 * Worker side. Each step runs in its own short transaction on `db` (never across the HTTP call):
 * read + mark running → verify at the platform → set the store status only if this version is
 * still current and pending (conditional), and finish the operation the same way.
 */
export class StoreVerificationHandlers {
  private readonly stores: StoresRepository;
  private readonly operations: OperationsRepository;
  private readonly audit: AuditRepository;

  constructor(
    private readonly db: Database,
    private readonly cipher: CredentialCipher,
    private readonly platform: PlatformClient,
  ) {
    this.stores = new StoresRepository(db);
    this.operations = new OperationsRepository(db);
    this.audit = new AuditRepository(db);
  }

  @OutboxHandler(verifyStoreCredentialsJob)
  async verify(
    payload: { storeId: string; version: number; operationId: string },
    context: JobContext,
  ): Promise<{ outcome: string }> {
    const workspaceId = context.workspaceId!;
    const { storeId, version, operationId } = payload;
    try {
      const plan = await this.db.withWorkspace(workspaceId, async () => {
        const store = await this.stores.findState(storeId);
        if (!store) return this.finish(operationId, GONE, 'gone');
        if (store.credentialVersion !== version) return this.finish(operationId, SUPERSEDED, 'superseded');
        // Already decided (a redelivery): make sure the operation says so, call nothing.
        if (store.status !== 'pending_verification') return this.finishByStatus(operationId, store.status);
        await this.operations.markRunning(operationId);
        const encrypted = await this.stores.findCredentials(storeId, version);
        if (!encrypted) throw new PermanentJobError(GONE);
        try {
          return { store, credentials: this.cipher.decrypt(encrypted, { workspaceId, storeId, version }) };
        } catch (error) {
          if (error instanceof CredentialDecryptError) {
            throw new PermanentJobError({
              code: 'CREDENTIALS_UNREADABLE',
              message: 'the stored credentials cannot be read; replace them',
            });
          }
          throw error;
        }
      });
      if (typeof plan === 'string') return { outcome: plan };

      const outcome = await this.platform.verifyCredentials(plan.store.storeExternalId, plan.credentials);

      return await this.db.withWorkspace(workspaceId, async () => {
        if (!(await this.stores.finishVerification(storeId, version, outcome))) {
          // Replaced or decided meanwhile: the current state decides the operation.
          const now = await this.stores.findState(storeId);
          if (!now) return { outcome: await this.finish(operationId, GONE, 'gone') };
          if (now.credentialVersion !== version)
            return { outcome: await this.finish(operationId, SUPERSEDED, 'superseded') };
          return { outcome: await this.finishByStatus(operationId, now.status) };
        }
        await this.audit.append({
          action: outcome.valid ? 'STORE_VERIFIED' : 'STORE_CREDENTIALS_REJECTED',
          entityType: 'store',
          entityId: storeId,
          actor: 'system',
          metadata: { credentialVersion: version, operationId },
        });
        if (outcome.valid) await this.operations.markSucceeded(operationId);
        else await this.operations.markFailed(operationId, INVALID);
        return { outcome: outcome.valid ? 'active' : 'invalid_credentials' };
      });
    } catch (error) {
      const failure = permanentFailure(error, context, {
        code: 'PLATFORM_REJECTED',
        message: 'the marketplace refused the verification request',
      });
      if (!failure) throw error; // transient: BullMQ retries, the operation stays running
      // No verdict, and no job left to reach one: the store must not keep saying "pending".
      await this.db.withWorkspace(workspaceId, () => this.noVerdict(payload, failure));
      return { outcome: `failed:${failure.code}` };
    }
  }

  /** The outbox gave up on the job: no verdict for this version (if it is still the current one). */
  @OnOutboxDeadLetter(verifyStoreCredentialsJob)
  async abandoned(payload: { storeId: string; version: number; operationId: string }): Promise<void> {
    await this.noVerdict(payload, ABANDONED);
  }

  /** pending_verification → verification_failed while `version` is current; the operation fails. */
  private async noVerdict(
    { storeId, version, operationId }: { storeId: string; version: number; operationId: string },
    failure: SafeError,
  ): Promise<void> {
    if (await this.stores.failVerification(storeId, version)) {
      await this.audit.append({
        action: 'STORE_VERIFICATION_FAILED',
        entityType: 'store',
        entityId: storeId,
        actor: 'system',
        metadata: { credentialVersion: version, operationId, code: failure.code },
      });
    }
    await this.operations.markFailed(operationId, failure);
  }

  private async finish(operationId: string, error: SafeError, outcome: string): Promise<string> {
    await this.operations.markFailed(operationId, error);
    return outcome;
  }

  private async finishByStatus(operationId: string, status: StoreStatus): Promise<string> {
    if (status === 'active') await this.operations.markSucceeded(operationId);
    else if (status === 'invalid_credentials') await this.operations.markFailed(operationId, INVALID);
    else if (status === 'verification_failed') await this.operations.markFailed(operationId, NO_VERDICT);
    return status;
  }
}
