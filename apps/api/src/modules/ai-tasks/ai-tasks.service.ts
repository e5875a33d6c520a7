import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  IdempotencyService,
  type IdempotencyResultPolicy,
  type IdempotentOutcome,
  type IdempotentRequestContext,
} from '@listing/idempotency';
import { OutboxWriter } from '@listing/outbox';
import { IntegrityError, ResourceNotFoundError } from '../../common/domain-errors';
import { decodeCursor, toPage } from '../../common/page-cursor';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { AuditRepository } from '../audit/audit.repository';
import { OperationsRepository } from '../operations/operations.repository';
import { PRODUCT_DRAFT_MODULE } from '../product-drafts/product-drafts.service';
import { RecordsRepository } from '../records/records.repository';
import type { PageQuery } from '../stores/store.dto';
import type { CreateAiTaskInput } from './ai-task.dto';
import { runAiTaskJob } from './ai-task.job';
import type { AiTaskAccepted, AiTaskView } from './ai-task-view';
import { AiTasksRepository } from './ai-tasks.repository';

/**
 * AI tasks on product drafts: task + feature execution (mode 'outbox', PENDING) + operation +
 * event in one transaction. Neither the idempotency record nor the audit holds AI input or output.
 */
@Injectable()
export class AiTasksService {
  private readonly policy: IdempotencyResultPolicy<AiTaskAccepted>;

  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    private readonly tasks: AiTasksRepository,
    private readonly records: RecordsRepository,
    private readonly operations: OperationsRepository,
    private readonly audit: AuditRepository,
    private readonly writer: OutboxWriter,
  ) {
    this.policy = {
      name: 'ai-task-accepted-reference-v1',
      serialize: (r) => ({ aiTaskId: r.aiTask.id, operationId: r.operation.id }),
      restore: (stored) => {
        const ref = stored as { aiTaskId: string; operationId: string };
        return this.accepted(ref.aiTaskId, ref.operationId);
      },
    };
  }

  create(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    input: CreateAiTaskInput,
  ): Promise<IdempotentOutcome<AiTaskAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      key: idem.key,
      operation: idem.operation,
      fingerprint: idem.fingerprint,
      policy: this.policy,
      status: 202,
      prepare: async () => {
        if (!(await this.records.findRevision(PRODUCT_DRAFT_MODULE, input.draftId, input.revision))) {
          throw new ResourceNotFoundError('product draft revision');
        }
        return input;
      },
      work: async (body) => {
        const id = randomUUID();
        const executionId = randomUUID();
        const options: Record<string, string> = {};
        if (body.kind === 'text') options.target = body.target ?? 'description';
        if (body.prompt) options.prompt = body.prompt;
        await this.tasks.insert({
          id,
          kind: body.kind,
          draftId: body.draftId,
          baseRevision: body.revision,
          options,
          executionId,
          createdBy: auth.userId,
        });
        const operationId = randomUUID();
        await this.operations.create({
          id: operationId,
          kind: `ai-task.${body.kind}`,
          resourceType: 'ai_task',
          resourceId: id,
          createdBy: auth.userId,
        });
        await this.writer.appendJob(runAiTaskJob, { aiTaskId: id, operationId });
        await this.audit.append({
          action: 'AI_TASK_REQUESTED',
          entityType: PRODUCT_DRAFT_MODULE,
          entityId: body.draftId,
          revision: body.revision,
          actorUserId: auth.userId,
          metadata: { aiTaskId: id, kind: body.kind, executionId, operationId },
        });
        return this.accepted(id, operationId);
      },
    });
  }

  get(auth: WorkspaceAuthContext, id: string): Promise<AiTaskView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const view = await this.tasks.find(id);
      if (!view) throw new ResourceNotFoundError('AI task');
      return view;
    });
  }

  list(auth: WorkspaceAuthContext, query: PageQuery) {
    const after = decodeCursor(query.cursor);
    return this.db.withWorkspace(auth.workspaceId, async () =>
      toPage(await this.tasks.list(query.limit + 1, after), query.limit),
    );
  }

  private async accepted(aiTaskId: string, operationId: string): Promise<AiTaskAccepted> {
    const [aiTask, operation] = await Promise.all([
      this.tasks.findAsAccepted(aiTaskId),
      this.operations.findAsAccepted(operationId),
    ]);
    if (!aiTask || !operation) throw new IntegrityError('the AI task of a stored result no longer exists');
    return { aiTask, operation };
  }
}
