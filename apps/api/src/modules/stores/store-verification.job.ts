import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  defineJob,
  OnOutboxDeadLetter,
  OutboxHandler,
  PermanentStepError,
  runRemoteStep,
  skip,
  type JobContext,
  type RemoteStep,
  type StepFailure,
  type StepFailureContext,
} from '@listing/outbox';
import { z } from 'zod';
import { AuditService } from '../audit/audit.service';
import { OperationProgress } from '../operations/operation-progress.service';
import { OPERATION_FAILURES } from '../operations/operation.failures';
import { PlatformClient, type MarketplaceCredentials } from '../platform/platform.client';
import { platformExhausted, platformVerdict } from '../platform/platform.failures';
import { CredentialCipher, CredentialDecryptError } from './credential-cipher';
import { STORE_FAILURES } from './stores.failures';
import { StoresRepository, type StoreState } from './stores.repository';
import type { StoreStatus } from './store-view';

/**
 * Verifies one credential version of a store at the marketplace. The payload holds ids and the
 * version only (`version` = the store's credential version this job verifies).
 */
export const verifyStoreCredentialsJob = defineJob({
  name: 'store.verify-credentials',
  queue: 'stores',
  schema: z.object({ storeId: z.uuid(), version: z.number().int().positive(), operationId: z.uuid() }),
  // Re-entrant by conditional transitions (version + status); the check itself has no side effect.
  // The marketplace call must not sit in a transaction: the remote step opens short ones around it.
  inbox: false,
  transaction: false,
});

type Payload = z.infer<typeof verifyStoreCredentialsJob.schema>;
type Plan = { store: StoreState; credentials: MarketplaceCredentials };
type Verdict = Awaited<ReturnType<PlatformClient['verifyCredentials']>>;
type Outcome = { outcome: string };

/**
 * The worker side: read + mark running → verify at the platform → set the store status only if
 * this version is still current and pending (conditional), and finish the operation the same way.
 */
@Injectable()
export class StoreVerificationJob implements RemoteStep<Payload, Plan, Verdict, Outcome> {
  constructor(
    private readonly db: Database,
    private readonly stores: StoresRepository,
    private readonly cipher: CredentialCipher,
    private readonly platform: PlatformClient,
    private readonly operations: OperationProgress,
    private readonly audit: AuditService,
  ) {}

  @OutboxHandler(verifyStoreCredentialsJob)
  verify(payload: Payload, context: JobContext) {
    return runRemoteStep(this.db, this, payload, context);
  }

  async claim({ storeId, version, operationId }: Payload, context: JobContext) {
    const store = await this.stores.findState(storeId);
    const decided = await this.decided(store, version, operationId);
    if (decided) return skip(decided);
    await this.operations.running(operationId);
    const encrypted = await this.stores.findCredentials(storeId, version);
    if (!encrypted) throw new PermanentStepError(STORE_FAILURES.STORE_GONE);
    try {
      const scope = { workspaceId: context.workspaceId!, storeId, version };
      return { store: store!, credentials: this.cipher.decrypt(encrypted, scope) };
    } catch (error) {
      if (error instanceof CredentialDecryptError) {
        throw new PermanentStepError(STORE_FAILURES.CREDENTIALS_UNREADABLE);
      }
      throw error;
    }
  }

  call(plan: Plan): Promise<Verdict> {
    return this.platform.verifyCredentials(plan.store.storeExternalId, plan.credentials);
  }

  async settle(_plan: Plan, verdict: Verdict, { storeId, version, operationId }: Payload) {
    if (!(await this.stores.finishVerification(storeId, version, verdict))) {
      // Replaced or decided meanwhile: the current state decides the operation.
      const now = await this.stores.findState(storeId);
      return (await this.decided(now, version, operationId)) ?? { outcome: 'pending_verification' };
    }
    await this.audit.append({
      action: verdict.valid ? 'STORE_VERIFIED' : 'STORE_CREDENTIALS_REJECTED',
      entityType: 'store',
      entityId: storeId,
      actor: 'system',
      metadata: { credentialVersion: version, operationId },
    });
    if (verdict.valid) await this.operations.succeeded(operationId);
    else await this.operations.failed(operationId, STORE_FAILURES.STORE_CREDENTIALS_INVALID);
    return { outcome: verdict.valid ? 'active' : 'invalid_credentials' };
  }

  permanent(error: unknown) {
    return platformVerdict(error, STORE_FAILURES.PLATFORM_REJECTED);
  }

  exhausted(error: unknown) {
    return platformExhausted(error);
  }

  /** No verdict, and no job left to reach one: the store must not keep saying "pending". */
  async fail(payload: Payload, { failure }: StepFailureContext<Plan>) {
    await this.noVerdict(payload, failure);
    return { outcome: `failed:${failure.code}` };
  }

  /** The outbox gave up on the job: no verdict for this version (if it is still the current one). */
  @OnOutboxDeadLetter(verifyStoreCredentialsJob)
  async abandoned(payload: Payload): Promise<void> {
    await this.noVerdict(payload, OPERATION_FAILURES.TASK_ABANDONED);
  }

  /**
   * What the store's state already says about this version's operation: gone, superseded, or
   * decided by an earlier delivery (the operation is finished to match); null while it is pending.
   */
  private async decided(store: StoreState | undefined, version: number, operationId: string) {
    const failed = async (failure: StepFailure, outcome: string) => {
      await this.operations.failed(operationId, failure);
      return { outcome };
    };
    if (!store) return failed(STORE_FAILURES.STORE_GONE, 'gone');
    if (store.credentialVersion !== version)
      return failed(STORE_FAILURES.CREDENTIALS_SUPERSEDED, 'superseded');
    return this.finishByStatus(operationId, store.status);
  }

  private async finishByStatus(operationId: string, status: StoreStatus): Promise<Outcome | null> {
    if (status === 'pending_verification') return null;
    if (status === 'active') await this.operations.succeeded(operationId);
    else if (status === 'invalid_credentials')
      await this.operations.failed(operationId, STORE_FAILURES.STORE_CREDENTIALS_INVALID);
    else if (status === 'verification_failed')
      await this.operations.failed(operationId, STORE_FAILURES.STORE_VERIFICATION_FAILED);
    return { outcome: status };
  }

  /** pending_verification → verification_failed while `version` is current; the operation fails. */
  private async noVerdict({ storeId, version, operationId }: Payload, failure: StepFailure): Promise<void> {
    if (await this.stores.failVerification(storeId, version)) {
      await this.audit.append({
        action: 'STORE_VERIFICATION_FAILED',
        entityType: 'store',
        entityId: storeId,
        actor: 'system',
        metadata: { credentialVersion: version, operationId, code: failure.code },
      });
    }
    await this.operations.failed(operationId, failure);
  }
}
