import { z } from 'zod';

export const createStoreSyncSchema = z.strictObject({ storeId: z.uuid() });
export type CreateStoreSyncInput = z.infer<typeof createStoreSyncSchema>;
