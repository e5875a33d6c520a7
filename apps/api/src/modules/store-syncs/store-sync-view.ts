import { z } from 'zod';
import { instant, named, pageOf, uuid } from '../../common/api-schemas';
import { acceptedOf, operationFailureCodeSchema } from '../operations/operation-view';

export const storeSyncStatusSchema = z.enum(['pending', 'running', 'succeeded', 'failed']);
export type StoreSyncStatus = z.output<typeof storeSyncStatusSchema>;

export const storeSyncViewSchema = named(
  'StoreSync',
  z.object({
    id: uuid(),
    storeId: uuid(),
    status: storeSyncStatusSchema,
    pages: z.number().int(),
    itemsSynced: z.number().int(),
    errorCode: operationFailureCodeSchema.nullable(),
    createdAt: instant(),
    completedAt: instant().nullable(),
  }),
  "A run that reads a store's online products from the marketplace",
);
export type StoreSyncView = z.output<typeof storeSyncViewSchema>;

export const storeSyncPageSchema = pageOf('StoreSyncPage', storeSyncViewSchema);

export const storeSyncAcceptedSchema = acceptedOf('StoreSyncAccepted', 'sync', storeSyncViewSchema);
export type StoreSyncAccepted = z.output<typeof storeSyncAcceptedSchema>;

/** A store's online product as its syncs last saw it. */
export const storeProductViewSchema = named(
  'StoreProduct',
  z.object({
    platformProductId: z.string(),
    title: z.string(),
    price: z.string().nullable(),
    platformStatus: z.string(),
    platformCreatedAt: instant().nullable(),
    lastSyncId: uuid(),
    firstSeenAt: instant(),
    lastSeenAt: instant(),
  }),
  "A store's online product as its syncs last saw it",
);
export type StoreProductView = z.output<typeof storeProductViewSchema>;

export const storeProductPageSchema = pageOf('StoreProductPage', storeProductViewSchema);
