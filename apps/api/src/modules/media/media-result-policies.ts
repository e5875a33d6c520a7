import type { IdempotencyResultPolicy } from '@listing/idempotency';
import { IntegrityError } from '../../common/domain-errors';
import type { AsyncCommands } from '../operations/async-commands.service';
import type { MediaAccepted, MediaView } from './media-view';
import type { MediaRepository } from './media.repository';

/**
 * Result policies of media. Envelopes keep ids only; restore rebuilds the first response from
 * columns written once (the media as created / as accepted, the operation as accepted), never
 * from its current state.
 */
export function mediaCreatedPolicy(media: MediaRepository): IdempotencyResultPolicy<MediaView> {
  return {
    name: 'media-created-reference-v1',
    serialize: (view) => ({ mediaId: view.id }),
    async restore(stored) {
      const { mediaId } = stored as { mediaId: string };
      const view = await media.findAsCreated(mediaId);
      if (!view) throw new IntegrityError('the media of a stored result no longer exists');
      return view;
    },
  };
}

export function mediaAcceptedPolicy(
  media: MediaRepository,
  commands: AsyncCommands,
): IdempotencyResultPolicy<MediaAccepted> {
  return {
    name: 'media-accepted-reference-v1',
    serialize: (r) => ({ mediaId: r.media.id, operationId: r.operation.id }),
    async restore(stored) {
      const ref = stored as { mediaId: string; operationId: string };
      const [view, operation] = await Promise.all([
        media.findAsAccepted(ref.mediaId),
        commands.operationAsAccepted(ref.operationId),
      ]);
      if (!view || !operation || view.operationId !== operation.id) {
        throw new IntegrityError('the media operation of a stored result no longer exists');
      }
      return { media: view, operation };
    },
  };
}
