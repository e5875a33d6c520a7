import { Inject, Injectable } from '@nestjs/common';
import { OBJECT_STORAGE, type ObjectStorage } from '../object-storage/object-storage.client';
import { MediaRepository } from './media.repository';

/** A ready image as another module may send it on: where its bytes are and what they are. */
export interface ReadyImage {
  mediaId: string;
  objectKey: string;
  contentType: string;
  sha256: string;
}

/** What other modules may ask of the media library (a draft's images). */
@Injectable()
export class MediaUsage {
  constructor(
    private readonly media: MediaRepository,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
  ) {}

  /** Of `ids`, those naming no media of the bound workspace, or a failed one. */
  unusable(ids: readonly string[]): Promise<string[]> {
    return this.media.unusable(ids);
  }

  /** Of `ids` (in their order), the media of the bound workspace that are ready. */
  async readyImages(ids: readonly string[]): Promise<ReadyImage[]> {
    const byId = new Map((await this.media.findReady(ids)).map((m) => [m.id, m]));
    return ids.flatMap((id) => {
      const media = byId.get(id.toLowerCase());
      if (!media?.checksumSha256) return [];
      const { objectKey, contentType, checksumSha256: sha256 } = media;
      return [{ mediaId: media.id, objectKey, contentType, sha256 }];
    });
  }

  /** A ready image's bytes, or null when the stored object is gone or not what was checked. */
  async bytesOf(image: ReadyImage): Promise<Buffer | null> {
    const found = await this.storage.get(image.objectKey);
    return found && found.object.sha256 === image.sha256 ? found.body : null;
  }
}
