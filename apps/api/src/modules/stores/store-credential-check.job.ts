import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  defineJob,
  OnOutboxDeadLetter,
  OutboxHandler,
  runRemoteStep,
  skip,
  type JobContext,
  type RemoteStep,
  type StepFailureContext,
} from '@listing/outbox';
import { z } from 'zod';
import { AuditService } from '../audit/audit.service';
import { OperationProgress } from '../operations/operation-progress.service';
import { OPERATION_FAILURES } from '../operations/operation.failures';
import { PlatformClient } from '../platform/platform.client';
import { platformExhausted, platformVerdict } from '../platform/platform.failures';
import { StoreAccess } from './store-access.service';
import { STORE_FAILURES } from './stores.failures';
import { StoresRepository } from './stores.repository';

/**
 * Checks an active store's current credentials at the marketplace again (a merchant may have
 * revoked the key there). The payload holds ids and the credential version checked.
 */
export const checkStoreCredentialsJob = defineJob({
  name: 'store.check-credentials',
  queue: 'stores',
  schema: z.object({ storeId: z.uuid(), version: z.number().int().positive(), operationId: z.uuid() }),
  // Re-entrant by the operation (open → finished once) and the store's conditional transition.
  inbox: false,
  transaction: false,
});

type Payload = z.infer<typeof checkStoreCredentialsJob.schema>;
type Plan = Awaited<ReturnType<StoreAccess['active']>>;
type Verdict = Awaited<ReturnType<PlatformClient['verifyCredentials']>>;
type Outcome = { outcome: string };

/** claim (the operation is open, the store active at `version`) → verify → settle. */
@Injectable()
export class StoreCredentialCheckJob implements RemoteStep<Payload, Plan, Verdict, Outcome> {
  constructor(
    private readonly db: Database,
    private readonly stores: StoresRepository,
    private readonly access: StoreAccess,
    private readonly platform: PlatformClient,
    private readonly operations: OperationProgress,
    private readonly audit: AuditService,
  ) {}

  @OutboxHandler(checkStoreCredentialsJob)
  check(payload: Payload, context: JobContext) {
    return runRemoteStep(this.db, this, payload, context);
  }

  async claim({ storeId, version, operationId }: Payload, context: JobContext) {
    if (!(await this.operations.lockOpen(operationId))) return skip({ outcome: 'skipped' });
    const store = await this.access.findState(storeId);
    if (store && store.credentialVersion !== version) {
      await this.operations.failed(operationId, STORE_FAILURES.CREDENTIALS_SUPERSEDED);
      return skip({ outcome: 'superseded' });
    }
    const plan = await this.access.active(context.workspaceId!, storeId); // gone or not active: a verdict
    await this.operations.running(operationId);
    return plan;
  }

  call(plan: Plan): Promise<Verdict> {
    return this.platform.verifyCredentials(plan.storeExternalId, plan.credentials);
  }

  async settle(_plan: Plan, verdict: Verdict, { storeId, version, operationId }: Payload) {
    const rejected = !verdict.valid && (await this.stores.rejectActiveCredentials(storeId, version));
    await this.audit.append({
      action: verdict.valid ? 'STORE_CREDENTIALS_CHECKED' : 'STORE_CREDENTIALS_REJECTED',
      entityType: 'store',
      entityId: storeId,
      actor: 'system',
      metadata: { credentialVersion: version, operationId, storeChanged: rejected },
    });
    if (verdict.valid) await this.operations.succeeded(operationId);
    else await this.operations.failed(operationId, STORE_FAILURES.STORE_CREDENTIALS_INVALID);
    return { outcome: verdict.valid ? 'valid' : 'invalid_credentials' };
  }

  permanent(error: unknown) {
    return platformVerdict(error, STORE_FAILURES.PLATFORM_REJECTED);
  }

  exhausted(error: unknown) {
    return platformExhausted(error);
  }

  /** No verdict: the store keeps its status; only the check's operation fails. */
  async fail({ operationId }: Payload, { failure }: StepFailureContext<Plan>) {
    await this.operations.failed(operationId, failure);
    return { outcome: `failed:${failure.code}` };
  }

  @OnOutboxDeadLetter(checkStoreCredentialsJob)
  async abandoned({ operationId }: Payload): Promise<void> {
    await this.operations.failed(operationId, OPERATION_FAILURES.TASK_ABANDONED);
  }
}
