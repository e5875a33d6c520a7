import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { IdempotencyResultPolicy } from '@listing/idempotency';
import { OutboxWriter, type JobDefinition } from '@listing/outbox';
import { IntegrityError } from '../../common/domain-errors';
import { AuditService, type AuditEntry } from '../audit/audit.service';
import { OperationsRepository } from './operations.repository';
import type { OperationView } from './operation-view';

export interface AcceptCommand<P extends Record<string, unknown>> {
  kind: string;
  resourceType: string;
  resourceId: string;
  actorUserId: string;
  job: JobDefinition<P>;
  /** The job's payload (ids and versions only), given the new operation's id. */
  payload: (operationId: string) => P;
  audit: (operationId: string) => Omit<AuditEntry, 'actorUserId'>;
  /** The new operation's id, when the resource must name it before the command is accepted. */
  operationId?: string;
}

/**
 * The shared tail of every asynchronous command (202 + operation): inside the command's
 * transaction, the operation (pending), the outbox event for its job and the audit entry.
 */
@Injectable()
export class AsyncCommands {
  constructor(
    private readonly operations: OperationsRepository,
    private readonly writer: OutboxWriter,
    private readonly audit: AuditService,
  ) {}

  /** A pending operation, for commands that write their outbox event themselves. */
  createOperation(op: Parameters<OperationsRepository['create']>[0]): Promise<OperationView> {
    return this.operations.create(op);
  }

  /** The operation exactly as its accepting request returned it (pending). */
  operationAsAccepted(id: string): Promise<OperationView | undefined> {
    return this.operations.findAsAccepted(id);
  }

  /** Returns the new operation's id. */
  async accept<P extends Record<string, unknown>>(command: AcceptCommand<P>): Promise<string> {
    const operationId = command.operationId ?? randomUUID();
    await this.operations.create({
      id: operationId,
      kind: command.kind,
      resourceType: command.resourceType,
      resourceId: command.resourceId,
      createdBy: command.actorUserId,
    });
    await this.writer.appendJob(command.job, command.payload(operationId));
    await this.audit.append({ ...command.audit(operationId), actorUserId: command.actorUserId });
    return operationId;
  }

  /**
   * Result policy of a 202 answer `{ [field]: resource, operation }`: the envelope keeps the two
   * ids; `load` rebuilds both exactly as accepted (pending), whatever happened since.
   */
  acceptedPolicy<F extends string, R extends Record<F, { id: string }> & { operation: OperationView }>(
    name: string,
    field: F,
    load: (resourceId: string, operationId: string) => Promise<R>,
  ): IdempotencyResultPolicy<R> {
    const idKey = `${field}Id`;
    return {
      name,
      serialize: (r) => ({ [idKey]: r[field].id, operationId: r.operation.id }),
      restore: (stored) => {
        const ref = stored as Record<string, string>;
        return load(ref[idKey]!, ref.operationId!);
      },
    };
  }

  /** `{ [field]: resource, operation }` as first answered. */
  async accepted<F extends string, V>(
    field: F,
    resourceId: string,
    operationId: string,
    findAsAccepted: (resourceId: string) => Promise<V | undefined>,
  ): Promise<Record<F, V> & { operation: OperationView }> {
    const [resource, operation] = await Promise.all([
      findAsAccepted(resourceId),
      this.operations.findAsAccepted(operationId),
    ]);
    if (!resource || !operation) throw new IntegrityError(`the ${field} of a stored result no longer exists`);
    return { [field]: resource, operation } as Record<F, V> & { operation: OperationView };
  }
}
