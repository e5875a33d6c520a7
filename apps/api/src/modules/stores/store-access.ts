import { PermanentJobError } from '../platform/job-failures';
import type { CredentialCipher, StoreCredentials } from './credential-cipher';
import type { StoresRepository } from './stores.repository';

/**
 * For workers acting on a store at the marketplace: the active store's external id and the
 * decrypted credentials of its current version. Inside the caller's workspace transaction; the
 * clear credentials only live in the returned object.
 */
export async function activeStoreAccess(
  stores: StoresRepository,
  cipher: CredentialCipher,
  workspaceId: string,
  storeId: string,
): Promise<{ storeExternalId: string; credentials: StoreCredentials }> {
  const store = await stores.findState(storeId);
  if (!store) throw new PermanentJobError({ code: 'RESOURCE_GONE', message: 'the store no longer exists' });
  if (store.status !== 'active') {
    throw new PermanentJobError({
      code: 'STORE_NOT_ACTIVE',
      message: 'the store has no verified credentials',
    });
  }
  const encrypted = await stores.findCredentials(storeId, store.credentialVersion);
  if (!encrypted)
    throw new PermanentJobError({ code: 'RESOURCE_GONE', message: 'the store credentials are missing' });
  try {
    return {
      storeExternalId: store.storeExternalId,
      credentials: cipher.decrypt(encrypted, { workspaceId, storeId, version: store.credentialVersion }),
    };
  } catch {
    throw new PermanentJobError({
      code: 'CREDENTIALS_UNREADABLE',
      message: 'the stored credentials cannot be read; replace them',
    });
  }
}
