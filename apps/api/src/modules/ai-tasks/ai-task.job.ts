import type { Database } from '@listing/db';
import {
  defineJob,
  InboxRepository,
  OnOutboxDeadLetter,
  OutboxHandler,
  type JobContext,
} from '@listing/outbox';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { storableJson, storableText } from '../../common/storable-text';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { AuditRepository } from '../audit/audit.repository';
import { OperationsRepository } from '../operations/operations.repository';
import { ABANDONED, PermanentJobError, permanentFailure } from '../platform/job-failures';
import type { PlatformClient } from '../platform/platform.client';
import { PRODUCT_DRAFT_MODULE } from '../product-drafts/product-drafts.service';
import { RecordKernelService } from '../records/record-kernel.service';
import { RecordsRepository } from '../records/records.repository';
import type { AiTaskWork } from './ai-tasks.repository';
import { AiTasksRepository } from './ai-tasks.repository';

export const runAiTaskJob = defineJob({
  name: 'ai-task.run',
  queue: 'ai-tasks',
  schema: z.object({ aiTaskId: z.uuid(), operationId: z.uuid() }),
  // The vendor call must not sit in a transaction: the handler opens short ones around it, and
  // its attach step writes the inbox row itself.
  inbox: false,
  transaction: false,
});

/** The vendor's idempotency key of a task: billed once, whatever is redelivered. */
export const aiTaskProviderKey = (aiTaskId: string) => `ai-task-${aiTaskId}`;

/**
 * Runs an AI task: vendor call with the task's key (a repeat is a free replay of the same
 * result), then, in one transaction, the task's conditional success, the inbox row of the attach
 * step (keyed by the task id), the draft's new revision through the records kernel where the
 * result applies, and the execution and operation.
 */
export class AiTaskHandlers {
  private readonly tasks: AiTasksRepository;
  private readonly records: RecordsRepository;
  private readonly kernel: RecordKernelService;
  private readonly operations: OperationsRepository;
  private readonly audit: AuditRepository;
  private readonly inbox: InboxRepository;

  constructor(
    private readonly db: Database,
    private readonly platform: PlatformClient,
  ) {
    this.tasks = new AiTasksRepository(db);
    this.records = new RecordsRepository(db);
    this.audit = new AuditRepository(db);
    this.kernel = new RecordKernelService(db, this.records, this.audit);
    this.operations = new OperationsRepository(db);
    this.inbox = new InboxRepository(db);
  }

  @OutboxHandler(runAiTaskJob)
  async run(payload: { aiTaskId: string; operationId: string }, context: JobContext) {
    const workspaceId = context.workspaceId!;
    const { aiTaskId, operationId } = payload;
    let task: AiTaskWork | undefined;
    try {
      const plan = await this.db.withWorkspace(workspaceId, async () => {
        task = await this.tasks.findWork(aiTaskId);
        if (!task) return null;
        if (task.status === 'succeeded') {
          await this.operations.markSucceeded(operationId);
          return null;
        }
        if (task.status === 'failed') return null;
        const base = await this.records.findRevision(PRODUCT_DRAFT_MODULE, task.draftId, task.baseRevision);
        if (!base)
          throw new PermanentJobError({
            code: 'RESOURCE_GONE',
            message: 'the product draft no longer exists',
          });
        await this.tasks.markRunning(task);
        await this.operations.markRunning(operationId);
        return { task, base: base.data, input: vendorInput(task, base.data) };
      });
      if (!plan) return { outcome: 'skipped' };

      const output = await this.platform.ai(plan.task.kind, aiTaskProviderKey(aiTaskId), plan.input);
      const result = resultOf(plan.task.kind, output);

      return await this.db.withWorkspace(workspaceId, async () => {
        if (!(await this.tasks.claimSuccess(aiTaskId, result))) {
          await this.operations.markSucceeded(operationId); // finished by an earlier delivery
          return { outcome: 'skipped' };
        }
        if (!(await this.inbox.record(workspaceId, 'ai-task.attach', aiTaskId))) {
          throw new Error('ai task attached twice'); // unreachable while the transition holds; roll back
        }
        const change = draftChange(plan.task, result);
        let resultRevision: number | null = null;
        let notApplied: string[] = [];
        const head = change ? await this.records.lockHead(PRODUCT_DRAFT_MODULE, plan.task.draftId) : null;
        if (change) {
          if (!head)
            throw new PermanentJobError({
              code: 'RESOURCE_GONE',
              message: 'the product draft no longer exists',
            });
          // The result was made from the base revision. A field edited since then keeps the edit
          // (no silent lost update); the result stays on the task for the client to apply.
          notApplied = Object.keys(change).filter(
            (field) => !isDeepStrictEqual(head.payload[field], plan.base[field]),
          );
        }
        if (change && head && notApplied.length === 0) {
          const auth: WorkspaceAuthContext = {
            userId: plan.task.createdBy,
            sessionId: '',
            workspaceId,
            role: 'member',
          };
          const view = await this.kernel.update(
            auth,
            PRODUCT_DRAFT_MODULE,
            plan.task.draftId,
            head.revision,
            (current) => ({
              ...current,
              ...change,
            }),
            'system',
          );
          resultRevision = view.revision;
        }
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
        await this.operations.markSucceeded(operationId);
        return { outcome: 'succeeded', resultRevision };
      });
    } catch (error) {
      const failure = permanentFailure(error, context, {
        code: 'AI_REQUEST_REJECTED',
        message: 'the AI vendor refused the request',
      });
      if (!failure) throw error;
      await this.db.withWorkspace(workspaceId, async () => {
        const current = task ?? (await this.tasks.findWork(aiTaskId));
        if (current) await this.tasks.markFailed(current, failure.code);
        await this.operations.markFailed(operationId, failure);
      });
      return { outcome: `failed:${failure.code}` };
    }
  }
  /** The outbox gave up on the job: the task and its feature execution fail. */
  @OnOutboxDeadLetter(runAiTaskJob)
  async abandoned(payload: { aiTaskId: string; operationId: string }): Promise<void> {
    const task = await this.tasks.findWork(payload.aiTaskId);
    if (task) await this.tasks.markFailed(task, ABANDONED.code);
    await this.operations.markFailed(payload.operationId, ABANDONED);
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
function resultOf(kind: AiWorkKind, output: Record<string, unknown>): Record<string, unknown> {
  // Stored as jsonb: vendor text with a NUL or a split emoji would fail every attempt.
  const pick = (...fields: string[]) =>
    Object.fromEntries(
      fields.filter((f) => output[f] !== undefined).map((f) => [f, storableJson(output[f], 20_000)]),
    );
  if (kind === 'text') return pick('text', 'model', 'resultId');
  if (kind === 'category') return pick('categoryId', 'path', 'confidence', 'resultId');
  return pick('imageUrl', 'width', 'height', 'contentType', 'resultId');
}
type AiWorkKind = AiTaskWork['kind'];

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
