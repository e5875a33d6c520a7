import { DomainError, defineErrors } from '../../common/error-catalogue';

export const STORE_SYNC_ERRORS = defineErrors({
  SYNC_ALREADY_ACTIVE: {
    status: 409,
    description: 'A sync of this store is already pending or running; start another once it has finished.',
  },
});

export class SyncAlreadyActiveError extends DomainError<typeof STORE_SYNC_ERRORS> {
  readonly code = 'SYNC_ALREADY_ACTIVE';
  constructor() {
    super('a sync of this store is already pending or running; retry once it has finished');
  }
}
