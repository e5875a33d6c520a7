import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  IdempotencyService,
  type IdempotencyResultPolicy,
  type IdempotentOutcome,
  type IdempotentRequestContext,
} from '@listing/idempotency';
import { ResourceNotFoundError } from '../../common/domain-errors';
import { decodeCursor, toPage } from '../../common/page-cursor';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { AsyncCommands } from '../operations/async-commands.service';
import { PRODUCT_DRAFT_MODULE } from '../product-drafts/product-drafts.service';
import { RecordKernelService } from '../records/record-kernel.service';
import type { PageQuery } from '../../common/page-query';
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
  /** The 202 body as first answered (for the first answer and every replay). */
  private readonly accepted = (aiTaskId: string, operationId: string): Promise<AiTaskAccepted> =>
    this.commands.accepted('aiTask', aiTaskId, operationId, (id) => this.tasks.findAsAccepted(id));

  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    private readonly tasks: AiTasksRepository,
    private readonly records: RecordKernelService,
    private readonly commands: AsyncCommands,
  ) {
    this.policy = commands.acceptedPolicy('ai-task-accepted-reference-v1', 'aiTask', this.accepted);
  }

  create(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    input: CreateAiTaskInput,
  ): Promise<IdempotentOutcome<AiTaskAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
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
        const operationId = await this.commands.accept({
          kind: `ai-task.${body.kind}`,
          resourceType: 'ai_task',
          resourceId: id,
          actorUserId: auth.userId,
          job: runAiTaskJob,
          payload: (operationId) => ({ aiTaskId: id, operationId }),
          audit: (operationId) => ({
            action: 'AI_TASK_REQUESTED',
            entityType: PRODUCT_DRAFT_MODULE,
            entityId: body.draftId,
            revision: body.revision,
            metadata: { aiTaskId: id, kind: body.kind, executionId, operationId },
          }),
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
}
