import { z } from 'zod';
import { instant, named, pageOf, uuid } from '../../common/api-schemas';
import { acceptedOf, operationFailureCodeSchema } from '../operations/operation-view';

/**
 * superseded: a newer revision was requested or is live before this one was sent; it is never
 * sent. outcome_unknown: the marketplace never confirmed it (a newer update overwrites whatever
 * it did; requesting the same revision again resends it under the same provider key).
 */
export const publicationUpdateStatusSchema = z.enum([
  'pending',
  'sending',
  'applied',
  'superseded',
  'failed',
  'outcome_unknown',
]);
export type PublicationUpdateStatus = z.output<typeof publicationUpdateStatusSchema>;

export const publicationUpdateViewSchema = named(
  'PublicationUpdate',
  z.object({
    id: uuid(),
    publicationId: uuid(),
    draftId: uuid(),
    revision: z.number().int().describe('The draft revision pushed to the live product'),
    status: publicationUpdateStatusSchema,
    errorCode: operationFailureCodeSchema.nullable(),
    createdAt: instant(),
    appliedAt: instant().nullable(),
  }),
  "A newer draft revision pushed to a publication's live product",
);
export type PublicationUpdateView = z.output<typeof publicationUpdateViewSchema>;

export const publicationUpdatePageSchema = pageOf('PublicationUpdatePage', publicationUpdateViewSchema);

export const publicationUpdateAcceptedSchema = acceptedOf(
  'PublicationUpdateAccepted',
  'update',
  publicationUpdateViewSchema,
);
export type PublicationUpdateAccepted = z.output<typeof publicationUpdateAcceptedSchema>;
