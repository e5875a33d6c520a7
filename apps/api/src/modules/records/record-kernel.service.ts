import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { ResourceNotFoundError } from '../../common/domain-errors';
import { RevisionMismatchError } from './records.errors';
import { revisionMatches, type RevisionCondition } from '../../common/http-params';
import type { IdempotencyResultPolicy } from '@listing/idempotency';
import { AuditService } from '../audit/audit.service';
import { featureExecutionPolicy, recordSnapshotPolicy } from './record-result-policies';
import type { FeatureExecutionResult, RecordView } from './record-view';
import { RecordsRepository } from './records.repository';

/** Who writes a record: a member of its workspace (an HTTP caller, or the user a worker acts for). */
export interface RecordActor {
  readonly workspaceId: string;
  readonly userId: string;
}

/** A feature a record offers. Local features compute a new payload; external ones are refused. */
export type RecordFeature =
  | { id: string; mode: 'local'; apply(payload: Record<string, unknown>): Record<string, unknown> }
  | { id: string; mode: 'external' };

/**
 * The records kernel: head + immutable revisions + feature executions + audit, written in the
 * caller's transaction (the idempotency engine's, when a key was sent). Every method expects the
 * ambient transaction to be bound to auth.workspaceId.
 */
@Injectable()
export class RecordKernelService {
  constructor(
    private readonly db: Database,
    private readonly records: RecordsRepository,
    private readonly audit: AuditService,
  ) {}

  findRevision(moduleCode: string, id: string, revision: number): Promise<RecordView | undefined> {
    return this.records.findRevision(moduleCode, id, revision);
  }

  findCurrent(moduleCode: string, id: string): Promise<RecordView | undefined> {
    return this.records.findCurrent(moduleCode, id);
  }

  listCurrent(
    ...args: Parameters<RecordsRepository['listCurrent']>
  ): ReturnType<RecordsRepository['listCurrent']> {
    return this.records.listCurrent(...args);
  }

  /** A record's revisions newest first, below `before` when given (none for an unknown record). */
  listRevisions(moduleCode: string, id: string, limit: number, before?: number): Promise<RecordView[]> {
    return this.records.listRevisions(moduleCode, id, limit, before);
  }

  /** Locks the head row (in the caller's transaction): its revision and payload as of now. */
  lockHead(moduleCode: string, id: string): ReturnType<RecordsRepository['lockHead']> {
    return this.records.lockHead(moduleCode, id);
  }

  /** The idempotent result policy of a route answering a revision (restores that revision). */
  snapshotPolicy(moduleCode: string): IdempotencyResultPolicy<RecordView> {
    return recordSnapshotPolicy(this.records, moduleCode);
  }

  /** The idempotent result policy of a feature execution (restores its revision and execution). */
  executionPolicy(moduleCode: string): IdempotencyResultPolicy<FeatureExecutionResult> {
    return featureExecutionPolicy(this.records, moduleCode);
  }

  async create(auth: RecordActor, moduleCode: string, payload: Record<string, unknown>): Promise<RecordView> {
    this.db.requireTransaction('record create');
    const id = randomUUID();
    const view = await this.records.insertWithFirstRevision(
      { workspaceId: auth.workspaceId, moduleCode, id, revision: 1, payload },
      auth.userId,
    );
    await this.audit.append({
      action: 'RECORD_CREATED',
      entityType: moduleCode,
      entityId: id,
      revision: 1,
      actorUserId: auth.userId,
    });
    return view;
  }

  /**
   * Optimistic update: the head is locked, its revision must match `expectedRevision` (else 412),
   * and `change` computes the next payload from the locked one.
   */
  async update(
    auth: RecordActor,
    moduleCode: string,
    id: string,
    expectedRevision: RevisionCondition,
    change: (current: Record<string, unknown>) => Record<string, unknown>,
    /** 'system': a worker applies a result on the user's behalf (`auth` names that user). */
    actor: 'user' | 'system' = 'user',
  ): Promise<RecordView> {
    const head = await this.lockHeadAt(moduleCode, id, expectedRevision);
    const revision = head.revision + 1;
    const view = await this.records.advance(
      { workspaceId: auth.workspaceId, moduleCode, id, revision, payload: change(head.payload) },
      auth.userId,
    );
    await this.audit.append({
      action: 'RECORD_UPDATED',
      entityType: moduleCode,
      entityId: id,
      revision,
      actorUserId: auth.userId,
      actor,
    });
    return view;
  }

  /**
   * Runs a feature. Local: new revision + SUCCEEDED execution. A feature that declares a direct
   * external call fails closed: execution mode=blocked_external, status=BLOCKED, revision
   * unchanged, audit FEATURE_<id>_BLOCKED. Real external work goes through the outbox.
   */
  async executeFeature(
    auth: RecordActor,
    moduleCode: string,
    id: string,
    feature: RecordFeature,
    expectedRevision: RevisionCondition | null,
  ): Promise<FeatureExecutionResult> {
    const head = await this.lockHeadAt(moduleCode, id, expectedRevision);
    const code = `FEATURE_${feature.id.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}`;
    const executionId = randomUUID();
    if (feature.mode === 'external') {
      const record = (await this.records.findRevision(moduleCode, id, head.revision))!;
      const execution = await this.records.insertExecution({
        workspaceId: auth.workspaceId,
        id: executionId,
        moduleCode,
        recordId: id,
        featureId: feature.id,
        mode: 'blocked_external',
        status: 'BLOCKED',
        baseRevision: head.revision,
        resultRevision: null,
        createdBy: auth.userId,
      });
      await this.audit.append({
        action: `${code}_BLOCKED`,
        entityType: moduleCode,
        entityId: id,
        revision: head.revision,
        actorUserId: auth.userId,
        metadata: { executionId },
      });
      return { record, execution };
    }
    const revision = head.revision + 1;
    const record = await this.records.advance(
      { workspaceId: auth.workspaceId, moduleCode, id, revision, payload: feature.apply(head.payload) },
      auth.userId,
    );
    const execution = await this.records.insertExecution({
      workspaceId: auth.workspaceId,
      id: executionId,
      moduleCode,
      recordId: id,
      featureId: feature.id,
      mode: 'local',
      status: 'SUCCEEDED',
      baseRevision: head.revision,
      resultRevision: revision,
      createdBy: auth.userId,
    });
    await this.audit.append({
      action: `${code}_SUCCEEDED`,
      entityType: moduleCode,
      entityId: id,
      revision,
      actorUserId: auth.userId,
      metadata: { executionId },
    });
    return { record, execution };
  }

  private async lockHeadAt(moduleCode: string, id: string, expectedRevision: RevisionCondition | null) {
    this.db.requireTransaction('record write');
    const head = await this.records.lockHead(moduleCode, id);
    if (!head) throw new ResourceNotFoundError('record');
    if (expectedRevision !== null && !revisionMatches(expectedRevision, head.revision))
      throw new RevisionMismatchError(head.revision);
    return head;
  }
}
