import { Injectable } from '@nestjs/common';
import { PermanentStepError } from '@listing/outbox';
import type { MarketplaceCredentials } from '../platform/platform.client';
import { CredentialCipher } from './credential-cipher';
import { STORE_FAILURES } from './stores.failures';
import { StoresRepository, type StoreState } from './stores.repository';

/** What other modules may know of a store: its state, and access to it at the marketplace. */
@Injectable()
export class StoreAccess {
  constructor(
    private readonly stores: StoresRepository,
    private readonly cipher: CredentialCipher,
  ) {}

  /** The store's status and current credential version, in the bound workspace. */
  findState(storeId: string): Promise<StoreState | undefined> {
    return this.stores.findState(storeId);
  }

  /**
   * For a job acting on a store at the marketplace: the active store's external id and the
   * decrypted credentials of its current version, inside the caller's workspace transaction. The
   * clear credentials only live in the returned object. A store that cannot be used is a verdict.
   */
  async active(
    workspaceId: string,
    storeId: string,
  ): Promise<{ storeExternalId: string; credentials: MarketplaceCredentials }> {
    const store = await this.stores.findState(storeId);
    if (!store) throw new PermanentStepError(STORE_FAILURES.STORE_GONE);
    if (store.status !== 'active') throw new PermanentStepError(STORE_FAILURES.STORE_NOT_ACTIVE);
    const encrypted = await this.stores.findCredentials(storeId, store.credentialVersion);
    if (!encrypted) throw new PermanentStepError(STORE_FAILURES.CREDENTIALS_MISSING);
    try {
      const version = store.credentialVersion;
      return {
        storeExternalId: store.storeExternalId,
        credentials: this.cipher.decrypt(encrypted, { workspaceId, storeId, version }),
      };
    } catch {
      throw new PermanentStepError(STORE_FAILURES.CREDENTIALS_UNREADABLE);
    }
  }
}
