import { Injectable } from '@nestjs/common';
import { MediaRepository } from './media.repository';

/** What other modules may ask of the media library (a draft's images). */
@Injectable()
export class MediaUsage {
  constructor(private readonly media: MediaRepository) {}

  /** Of `ids`, those naming no media of the bound workspace, or a failed one. */
  unusable(ids: readonly string[]): Promise<string[]> {
    return this.media.unusable(ids);
  }
}
