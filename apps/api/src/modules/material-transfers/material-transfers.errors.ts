import { DomainError, defineErrors } from '../../common/error-catalogue';

/** Copying a source URL into media. */
export const MATERIAL_TRANSFER_ERRORS = defineErrors({
  SOURCE_NOT_ALLOWED: {
    status: 422,
    description:
      'The source URL is not allowed: only http(s) URLs of allowlisted hosts, resolving to public addresses.',
  },
  MATERIAL_TRANSFER_EXISTS: {
    status: 409,
    description: 'The workspace already has a transfer of this source (`transferId`, `operationId`).',
  },
});

export class SourceNotAllowedError extends DomainError<typeof MATERIAL_TRANSFER_ERRORS> {
  readonly code = 'SOURCE_NOT_ALLOWED';
  constructor(reason: string) {
    super(`the source URL is not allowed: ${reason}`);
  }
}

/** The workspace already has a transfer for this source; its ids are in the problem body. */
export class MaterialTransferExistsError extends DomainError<typeof MATERIAL_TRANSFER_ERRORS> {
  readonly code = 'MATERIAL_TRANSFER_EXISTS';
  constructor(transferId: string, operationId: string) {
    super('a transfer of this source already exists in the workspace');
    this.extensions.transferId = transferId;
    this.extensions.operationId = operationId;
  }
}
