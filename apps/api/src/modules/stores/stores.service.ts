import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  IdempotencyService,
  type IdempotencyResultPolicy,
  type IdempotentOutcome,
  type IdempotentRequestContext,
} from '@listing/idempotency';
import { OutboxWriter } from '@listing/outbox';
import { IntegrityError, ResourceNotFoundError } from '../../common/domain-errors';
import { StoreAlreadyConnectedError, StoreNotActiveError } from './stores.errors';
import { decodeCursor, toPage } from '../../common/page-cursor';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { AuditService } from '../audit/audit.service';
import { AsyncCommands } from '../operations/async-commands.service';
import { CredentialCipher } from './credential-cipher';
import type { PageQuery } from '../../common/page-query';
import type { CreateStoreInput, ReplaceCredentialsInput } from './store.dto';
import { checkStoreCredentialsJob } from './store-credential-check.job';
import { verifyStoreCredentialsJob } from './store-verification.job';
import type { CredentialCheckAccepted, StoreAccepted, StoreView } from './store-view';
import { StoresRepository } from './stores.repository';

export const VERIFY_OPERATION_KIND = 'store.verify-credentials';

/**
 * Store authorizations. Each command stores a new encrypted credential version, an operation and
 * the verification event in the idempotency engine's transaction. The idempotency record keeps
 * { storeId, credentialVersion, operationId } only; a replay rebuilds the 202 body "as accepted".
 */
@Injectable()
export class StoresService {
  private readonly policy: IdempotencyResultPolicy<StoreAccepted>;
  /** The 202 body of a credential check, rebuilt from its ids (the store itself may have moved on). */
  private readonly checkPolicy: IdempotencyResultPolicy<CredentialCheckAccepted> = {
    name: 'store-credential-check-accepted-v1',
    serialize: (r) => ({ ...r.check, operationId: r.operation.id }),
    restore: (stored) => {
      const { storeId, credentialVersion, operationId } = stored as Record<string, never>;
      return this.checkAccepted(storeId, credentialVersion, operationId);
    },
  };

  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    private readonly stores: StoresRepository,
    private readonly commands: AsyncCommands,
    private readonly audit: AuditService,
    private readonly writer: OutboxWriter,
    private readonly cipher: CredentialCipher,
  ) {
    this.policy = {
      name: 'store-accepted-reference-v1',
      serialize: (r) => ({
        storeId: r.store.id,
        credentialVersion: r.store.credentialVersion,
        operationId: r.operation.id,
      }),
      restore: (stored) => {
        const ref = stored as { storeId: string; credentialVersion: number; operationId: string };
        return this.accepted(ref.storeId, ref.credentialVersion, ref.operationId);
      },
    };
  }

  create(auth: WorkspaceAuthContext, idem: IdempotentRequestContext, input: CreateStoreInput) {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: this.policy,
      status: 202,
      prepare: async () => input,
      work: async (body) => {
        const storeId = randomUUID();
        const inserted = await this.stores.insert({
          id: storeId,
          platform: body.platform,
          storeExternalId: body.storeExternalId,
          createdBy: auth.userId,
        });
        if (!inserted) {
          // The conflicting insert has committed (ON CONFLICT waited for it): its row is visible.
          const existing = await this.stores.findIdByExternal(body.platform, body.storeExternalId);
          throw new StoreAlreadyConnectedError(existing);
        }
        return this.storeCredentials(auth, storeId, 1, body, 'STORE_CREATED');
      },
    });
  }

  replaceCredentials(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    storeId: string,
    input: ReplaceCredentialsInput,
  ): Promise<IdempotentOutcome<StoreAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: this.policy,
      status: 202,
      prepare: async () => input,
      work: async (body) => {
        const version = await this.stores.advanceCredentialVersion(storeId);
        if (version === undefined) throw new ResourceNotFoundError('store');
        return this.storeCredentials(auth, storeId, version, body, 'STORE_CREDENTIALS_REPLACED');
      },
    });
  }

  /** Checks the active store's current credentials at the marketplace again (202 + operation). */
  checkCredentials(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    storeId: string,
  ): Promise<IdempotentOutcome<CredentialCheckAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: this.checkPolicy,
      status: 202,
      prepare: async () => {
        const store = await this.stores.findState(storeId);
        if (!store) throw new ResourceNotFoundError('store');
        if (store.status !== 'active') throw new StoreNotActiveError(store.status);
        return store.credentialVersion;
      },
      work: async (version) => {
        const operationId = await this.commands.accept({
          kind: checkStoreCredentialsJob.name,
          resourceType: 'store',
          resourceId: storeId,
          actorUserId: auth.userId,
          job: checkStoreCredentialsJob,
          payload: (operationId) => ({ storeId, version, operationId }),
          audit: (operationId) => ({
            action: 'STORE_CREDENTIALS_CHECK_REQUESTED',
            entityType: 'store',
            entityId: storeId,
            metadata: { credentialVersion: version, operationId },
          }),
        });
        return this.checkAccepted(storeId, version, operationId);
      },
    });
  }

  get(auth: WorkspaceAuthContext, id: string): Promise<StoreView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const view = await this.stores.findView(id);
      if (!view) throw new ResourceNotFoundError('store');
      return view;
    });
  }

  list(auth: WorkspaceAuthContext, query: PageQuery) {
    const after = decodeCursor(query.cursor);
    return this.db.withWorkspace(auth.workspaceId, async () =>
      toPage(await this.stores.list(query.limit + 1, after), query.limit),
    );
  }

  /** Encrypts and stores one credential version, its operation, event and audit entry. */
  private async storeCredentials(
    auth: WorkspaceAuthContext,
    storeId: string,
    version: number,
    credentials: { apiKey: string; apiSecret: string },
    action: string,
  ): Promise<StoreAccepted> {
    const scope = { workspaceId: auth.workspaceId, storeId, version };
    await this.stores.insertCredentials(
      storeId,
      version,
      this.cipher.encrypt(credentials, scope),
      auth.userId,
    );
    const operationId = randomUUID();
    await this.commands.createOperation({
      id: operationId,
      kind: VERIFY_OPERATION_KIND,
      resourceType: 'store',
      resourceId: storeId,
      createdBy: auth.userId,
    });
    await this.writer.appendJob(verifyStoreCredentialsJob, { storeId, version, operationId });
    await this.audit.append({
      action,
      entityType: 'store',
      entityId: storeId,
      actorUserId: auth.userId,
      metadata: { credentialVersion: version, operationId },
    });
    // The first response is built exactly as a replay will rebuild it.
    return this.accepted(storeId, version, operationId);
  }

  private async accepted(storeId: string, version: number, operationId: string): Promise<StoreAccepted> {
    const [store, operation] = await Promise.all([
      this.stores.findAsAccepted(storeId, version),
      this.commands.operationAsAccepted(operationId),
    ]);
    if (!store || !operation) throw new IntegrityError('the store of a stored result no longer exists');
    return { store, operation };
  }

  private async checkAccepted(storeId: string, version: number, operationId: string) {
    const operation = await this.commands.operationAsAccepted(operationId);
    if (!operation) throw new IntegrityError('the operation of a stored result no longer exists');
    return { check: { storeId, credentialVersion: version }, operation };
  }
}
