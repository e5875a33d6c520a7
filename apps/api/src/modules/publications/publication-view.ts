import { z } from 'zod';
import { instant, named, pageOf, uuid } from '../../common/api-schemas';
import { acceptedOf, operationFailureCodeSchema } from '../operations/operation-view';

/**
 * outcome_unknown: the marketplace never confirmed the create and may have applied it (sql/014).
 * It keeps the (store, draft) slot; POST .../publications/{id}/retry sends the same create again.
 */
export const publicationStatusSchema = z.enum([
  'pending',
  'publishing',
  'published',
  'failed',
  'outcome_unknown',
]);
export type PublicationStatus = z.output<typeof publicationStatusSchema>;

export const publicationViewSchema = named(
  'Publication',
  z.object({
    id: uuid(),
    storeId: uuid(),
    draftId: uuid(),
    revision: z.number().int().describe('The draft revision first published'),
    liveRevision: z
      .number()
      .int()
      .nullable()
      .describe('The revision the marketplace product shows (null until published); only moves forward'),
    status: publicationStatusSchema,
    platformProductId: z.string().nullable(),
    errorCode: operationFailureCodeSchema.nullable(),
    createdAt: instant(),
    publishedAt: instant().nullable(),
  }),
  'A draft revision published to a store',
);
export type PublicationView = z.output<typeof publicationViewSchema>;

export const publicationPageSchema = pageOf('PublicationPage', publicationViewSchema);

export const publicationAcceptedSchema = acceptedOf(
  'PublicationAccepted',
  'publication',
  publicationViewSchema,
);
export type PublicationAccepted = z.output<typeof publicationAcceptedSchema>;
