import { Injectable } from '@nestjs/common';
import type { StepFailure } from '@listing/outbox';
import { OperationsRepository } from './operations.repository';

/**
 * What a job does to the operation it carries: conditional transitions (pending|running →
 * running → succeeded|failed), each true when it applied, so a redelivery cannot move an
 * operation backwards or finish it twice. In the caller's workspace transaction.
 */
@Injectable()
export class OperationProgress {
  constructor(private readonly operations: OperationsRepository) {}

  running(id: string): Promise<boolean> {
    return this.operations.markRunning(id);
  }

  succeeded(id: string): Promise<boolean> {
    return this.operations.markSucceeded(id);
  }

  failed(id: string, failure: StepFailure): Promise<boolean> {
    return this.operations.markFailed(id, failure);
  }

  /** Locks the operation while it is still open; false once it has ended. */
  lockOpen(id: string): Promise<boolean> {
    return this.operations.lockOpen(id);
  }
}
