import { z } from 'zod';
import { instant, named, pageOf, uuid } from '../../common/api-schemas';
import { acceptedOf, operationErrorSchema } from '../operations/operation-view';

export const transferStatusSchema = z.enum(['pending', 'running', 'succeeded', 'failed']);
export type TransferStatus = z.output<typeof transferStatusSchema>;

/** What the material-transfer endpoints return. `sourceUrl` is the source key: no signatures. */
export const materialTransferViewSchema = named(
  'MaterialTransfer',
  z.object({
    id: uuid(),
    status: transferStatusSchema,
    sourceUrl: z.string().describe('The source as its key: query strings and signatures removed'),
    objectKey: z.string(),
    contentType: z.string().nullable(),
    size: z.number().int().nullable(),
    checksumSha256: z.string().nullable(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
    error: operationErrorSchema.nullable(),
    operationId: uuid(),
    mediaId: uuid()
      .nullable()
      .describe(
        'The media the copy became when the transfer succeeded: processed like an upload, usable in imageIds of product drafts. Null until then, and for transfers that succeeded before transfers made media',
      ),
    createdAt: instant(),
    updatedAt: instant(),
    completedAt: instant().nullable(),
  }),
  'A copy of collected material from an allowlisted source into object storage; once succeeded, a media (`mediaId`)',
);
export type MaterialTransferView = z.output<typeof materialTransferViewSchema>;

export const materialTransferPageSchema = pageOf('MaterialTransferPage', materialTransferViewSchema);

export const transferAcceptedSchema = acceptedOf(
  'MaterialTransferAccepted',
  'transfer',
  materialTransferViewSchema,
);
export type TransferAccepted = z.output<typeof transferAcceptedSchema>;
