import { z } from 'zod';
import { instant, named, pageOf, uuid } from '../../common/api-schemas';
import { acceptedOf, operationErrorSchema } from '../operations/operation-view';

export const mediaStatusSchema = z.enum(['awaiting_content', 'uploaded', 'processing', 'ready', 'failed']);
export type MediaStatus = z.output<typeof mediaStatusSchema>;

/** What the media endpoints return. Object keys are storage references, never URLs. */
export const mediaViewSchema = named(
  'Media',
  z.object({
    id: uuid(),
    status: mediaStatusSchema,
    filename: z.string(),
    contentType: z.string(),
    size: z.number().int(),
    objectKey: z.string(),
    checksumSha256: z.string().nullable(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
    thumbnail: z
      .object({
        objectKey: z.string(),
        contentType: z.literal('image/png'),
        width: z.number().int(),
        height: z.number().int(),
      })
      .nullable(),
    error: operationErrorSchema.nullable(),
    operationId: uuid().nullable(),
    createdAt: instant(),
    updatedAt: instant(),
    uploadedAt: instant().nullable(),
    completedAt: instant().nullable(),
    processedAt: instant().nullable(),
  }),
  'An uploaded image and its processing (object keys are storage references, never URLs)',
);
export type MediaView = z.output<typeof mediaViewSchema>;

export const mediaPageSchema = pageOf('MediaPage', mediaViewSchema);

export const mediaAcceptedSchema = acceptedOf('MediaAccepted', 'media', mediaViewSchema);
export type MediaAccepted = z.output<typeof mediaAcceptedSchema>;
