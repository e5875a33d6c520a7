import { z } from 'zod';

// The marketplace's store id alphabet; anything else could never be verified.
const storeExternalId = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1-128 characters of [A-Za-z0-9._:-]');
const secret = z.string().min(1).max(512);

export const createStoreSchema = z.strictObject({
  platform: z.literal('sim'),
  storeExternalId,
  apiKey: secret,
  apiSecret: secret,
});
export type CreateStoreInput = z.infer<typeof createStoreSchema>;

export const replaceCredentialsSchema = z.strictObject({ apiKey: secret, apiSecret: secret });
export type ReplaceCredentialsInput = z.infer<typeof replaceCredentialsSchema>;
