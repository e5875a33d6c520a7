import type { IdempotencyResultPolicy } from '@listing/idempotency';
import { IntegrityError } from '../../common/domain-errors';
import type { AsyncCommands } from '../operations/async-commands.service';
import type { TransferAccepted } from './material-transfer-view';
import type { MaterialTransfersRepository } from './material-transfers.repository';

/** Ids only in the envelope; restore rebuilds the 202 body from columns that never change. */
export function transferAcceptedPolicy(
  transfers: MaterialTransfersRepository,
  commands: AsyncCommands,
): IdempotencyResultPolicy<TransferAccepted> {
  return {
    name: 'material-transfer-accepted-reference-v1',
    serialize: (r) => ({ transferId: r.transfer.id, operationId: r.operation.id }),
    async restore(stored) {
      const ref = stored as { transferId: string; operationId: string };
      const [transfer, operation] = await Promise.all([
        transfers.findAsAccepted(ref.transferId),
        commands.operationAsAccepted(ref.operationId),
      ]);
      if (!transfer || !operation || transfer.operationId !== operation.id) {
        throw new IntegrityError('the transfer of a stored result no longer exists');
      }
      return { transfer, operation };
    },
  };
}
