import { z } from 'zod';
import { instant, named, pageOf, uuid } from '../../common/api-schemas';
import { acceptedOf } from '../operations/operation-view';

/** verification_failed: no verdict for the current credentials (see sql/014); replacing them retries. */
export const storeStatusSchema = z.enum([
  'pending_verification',
  'active',
  'invalid_credentials',
  'verification_failed',
]);
export type StoreStatus = z.output<typeof storeStatusSchema>;

/** A store as the API shows it. Credentials are never part of it, not even masked. */
export const storeViewSchema = named(
  'Store',
  z.object({
    id: uuid(),
    platform: z.literal('sim'),
    storeExternalId: z.string(),
    status: storeStatusSchema,
    credentialVersion: z.number().int(),
    shopName: z.string().nullable(),
    createdAt: instant(),
    credentialsUpdatedAt: instant().describe('When the credentials of `credentialVersion` were stored'),
  }),
  'A store authorization on a marketplace. Credentials are write-only: never answered, not even masked.',
);
export type StoreView = z.output<typeof storeViewSchema>;

export const storePageSchema = pageOf('StorePage', storeViewSchema);

/** The 202 body of create / replace-credentials. */
export const storeAcceptedSchema = acceptedOf('StoreAccepted', 'store', storeViewSchema);
export type StoreAccepted = z.output<typeof storeAcceptedSchema>;

/** The 202 body of a credential check: what is checked, and the operation that says how it went. */
export const credentialCheckAcceptedSchema = acceptedOf(
  'CredentialCheckAccepted',
  'check',
  z.object({ storeId: uuid(), credentialVersion: z.number().int() }),
);
export type CredentialCheckAccepted = z.output<typeof credentialCheckAcceptedSchema>;
