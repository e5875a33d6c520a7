import { z } from 'zod';
import { idSchema } from '../../common/id-schema';

export const createStoreSyncSchema = z.strictObject({ storeId: idSchema });
export type CreateStoreSyncInput = z.infer<typeof createStoreSyncSchema>;
