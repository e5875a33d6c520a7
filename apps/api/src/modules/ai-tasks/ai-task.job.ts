import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  defineJob,
  OnOutboxDeadLetter,
  OutboxHandler,
  PermanentStepError,
  runRemoteStep,
  skip,
  type JobContext,
  type RemoteStep,
  type StepFailureContext,
} from '@listing/outbox';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { storableJson, storableText } from '../../common/storable-text';
import { AuditService } from '../audit/audit.service';
import { OperationProgress } from '../operations/operation-progress.service';
import { gone, OPERATION_FAILURES } from '../operations/operation.failures';
import { PlatformClient } from '../platform/platform.client';
import { platformExhausted, platformVerdict } from '../platform/platform.failures';
import { PRODUCT_DRAFT_MODULE } from '../product-drafts/product-drafts.service';
import { RecordKernelService } from '../records/record-kernel.service';
import { AI_TASK_FAILURES } from './ai-tasks.failures';
import { AiTasksRepository, type AiTaskWork } from './ai-tasks.repository';

export const runAiTaskJob = defineJob({
  name: 'ai-task.run',
  queue: 'ai-tasks',
  schema: z.object({ aiTaskId: z.uuid(), operationId: z.uuid() }),
  // The vendor call must not sit in a transaction: the remote step opens short ones around it.
  inbox: false,
  transaction: false,
});

/** The vendor's idempotency key of a task: billed once, whatever is redelivered. */
export const aiTaskProviderKey = (aiTaskId: string) => `ai-task-${aiTaskId}`;

const DRAFT_GONE = gone('the product draft no longer exists');

type Payload = z.infer<typeof runAiTaskJob.schema>;
type Plan = { task: AiTaskWork; base: Record<string, unknown>; input: Record<string, unknown> };
type Result = Record<string, unknown>;
type Outcome = { outcome: string; resultRevision?: number | null };

/**
 * Runs an AI task: vendor call with the task's key (a repeat is a free replay of the same
 * result), then, in one transaction, the task's conditional success, the draft's new revision
 * through the records kernel where the result applies, and the execution and operation.
 */
@Injectable()
export class AiTaskJob implements RemoteStep<Payload, Plan, Result, Outcome> {
  constructor(
    private readonly db: Database,
    private readonly tasks: AiTasksRepository,
    private readonly kernel: RecordKernelService,
    private readonly platform: PlatformClient,
    private readonly operations: OperationProgress,
    private readonly audit: AuditService,
  ) {}

  @OutboxHandler(runAiTaskJob)
  run(payload: Payload, context: JobContext) {
    return runRemoteStep(this.db, this, payload, context);
  }

  async claim({ aiTaskId, operationId }: Payload) {
    const task = await this.tasks.findWork(aiTaskId);
    if (!task || task.status === 'failed') return skip({ outcome: 'skipped' });
    if (task.status === 'succeeded') {
      await this.operations.succeeded(operationId);
      return skip({ outcome: 'skipped' });
    }
    const base = await this.kernel.findRevision(PRODUCT_DRAFT_MODULE, task.draftId, task.baseRevision);
    if (!base) throw new PermanentStepError(DRAFT_GONE);
    await this.tasks.markRunning(task);
    await this.operations.running(operationId);
    return { task, base: base.data, input: vendorInput(task, base.data) };
  }

  async call({ task, input }: Plan): Promise<Result> {
    return resultOf(task.kind, await this.platform.ai(task.kind, aiTaskProviderKey(task.id), input));
  }

  async settle(plan: Plan, result: Result, { aiTaskId, operationId }: Payload, context: JobContext) {
    if (!(await this.tasks.claimSuccess(aiTaskId, result))) {
      await this.operations.succeeded(operationId); // finished by an earlier delivery
      return { outcome: 'skipped' };
    }
    const { resultRevision, notApplied } = await this.apply(plan, result, context.workspaceId!);
    await this.tasks.setResultRevision(plan.task, resultRevision);
    await this.audit.append({
      action: `FEATURE_AI_${plan.task.kind.toUpperCase()}_SUCCEEDED`,
      entityType: PRODUCT_DRAFT_MODULE,
      entityId: plan.task.draftId,
      revision: resultRevision,
      actor: 'system',
      metadata: {
        aiTaskId,
        executionId: plan.task.executionId,
        operationId,
        ...(notApplied.length
          ? { notApplied: notApplied.join(','), reason: 'EDITED_SINCE_BASE_REVISION' }
          : {}),
      },
    });
    await this.operations.succeeded(operationId);
    return { outcome: 'succeeded', resultRevision };
  }

  permanent(error: unknown) {
    return platformVerdict(error, AI_TASK_FAILURES.AI_REQUEST_REJECTED);
  }

  exhausted(error: unknown) {
    return platformExhausted(error);
  }

  async fail({ aiTaskId, operationId }: Payload, { failure, plan }: StepFailureContext<Plan>) {
    const task = plan?.task ?? (await this.tasks.findWork(aiTaskId));
    if (task) await this.tasks.markFailed(task, failure.code);
    await this.operations.failed(operationId, failure);
    return { outcome: `failed:${failure.code}` };
  }

  /** The outbox gave up on the job: the task and its feature execution fail. */
  @OnOutboxDeadLetter(runAiTaskJob)
  async abandoned(payload: Payload): Promise<void> {
    const task = await this.tasks.findWork(payload.aiTaskId);
    if (task) await this.tasks.markFailed(task, OPERATION_FAILURES.TASK_ABANDONED.code);
    await this.operations.failed(payload.operationId, OPERATION_FAILURES.TASK_ABANDONED);
  }

  /**
   * The draft's new revision, made on the creator's behalf, when the result changes a field. The
   * result was made from the base revision: a field edited since keeps the edit (no silent lost
   * update); the result stays on the task for the client to apply.
   */
  private async apply(plan: Plan, result: Result, workspaceId: string) {
    const change = draftChange(plan.task, result);
    if (!change) return { resultRevision: null, notApplied: [] };
    const head = await this.kernel.lockHead(PRODUCT_DRAFT_MODULE, plan.task.draftId);
    if (!head) throw new PermanentStepError(DRAFT_GONE);
    const notApplied = Object.keys(change).filter(
      (field) => !isDeepStrictEqual(head.payload[field], plan.base[field]),
    );
    if (notApplied.length) return { resultRevision: null, notApplied };
    const actor = { workspaceId, userId: plan.task.createdBy };
    const view = await this.kernel.update(
      actor,
      PRODUCT_DRAFT_MODULE,
      plan.task.draftId,
      head.revision,
      (current) => ({ ...current, ...change }),
      'system',
    );
    return { resultRevision: view.revision, notApplied };
  }
}

/** The vendor request: a pure function of the task and its immutable base revision. */
function vendorInput(task: AiTaskWork, data: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = { title: data.title };
  if (typeof data.description === 'string') input.description = data.description;
  if (task.options.prompt) input.prompt = task.options.prompt;
  if (task.kind === 'text') input.target = task.options.target ?? 'description';
  return input;
}

/** What is kept of the vendor's answer (its billing ids are not). */
function resultOf(kind: AiTaskWork['kind'], output: Record<string, unknown>): Record<string, unknown> {
  // Stored as jsonb: vendor text with a NUL or a split emoji would fail every attempt.
  const pick = (...fields: string[]) =>
    Object.fromEntries(
      fields.filter((f) => output[f] !== undefined).map((f) => [f, storableJson(output[f], 20_000)]),
    );
  if (kind === 'text') return pick('text', 'model', 'resultId');
  if (kind === 'category') return pick('categoryId', 'path', 'confidence', 'resultId');
  return pick('imageUrl', 'width', 'height', 'contentType', 'resultId');
}

/** The draft fields a result changes, within the draft's limits; null when none applies. */
function draftChange(task: AiTaskWork, result: Record<string, unknown>): Record<string, unknown> | null {
  if (task.kind === 'text' && typeof result.text === 'string') {
    const target = task.options.target ?? 'description';
    return { [target]: storableText(result.text, target === 'title' ? 200 : 5000).trim() || 'Untitled' };
  }
  if (task.kind === 'category' && typeof result.categoryId === 'string') {
    return { categoryId: storableText(result.categoryId, 64) };
  }
  return null;
}
