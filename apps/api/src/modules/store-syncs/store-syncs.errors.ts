import { DomainError, defineErrors } from '../../common/error-catalogue';

export const STORE_SYNC_ERRORS = defineErrors({
  SYNC_ALREADY_ACTIVE: {
    status: 409,
    description:
      'A sync of this store is already pending or running (`syncId`); start another once it has finished.',
  },
});

export class SyncAlreadyActiveError extends DomainError<typeof STORE_SYNC_ERRORS> {
  readonly code = 'SYNC_ALREADY_ACTIVE';
  /** `syncId`: the active sync (absent when it finished in the meantime). */
  constructor(syncId?: string) {
    super('a sync of this store is already pending or running; retry once it has finished');
    if (syncId) this.extensions.syncId = syncId;
  }
}
