import type { OperationView } from '../operations/operation-view';

export type AiTaskKind = 'text' | 'category' | 'image';
export type AiTaskStatus = 'pending' | 'running' | 'succeeded' | 'failed';

export interface AiTaskView {
  id: string;
  kind: AiTaskKind;
  draftId: string;
  baseRevision: number;
  target: 'title' | 'description' | null;
  status: AiTaskStatus;
  /** The feature execution on the draft (mode 'outbox'). */
  executionId: string;
  /** The draft revision the result produced, when it applies (text, category). */
  resultRevision: number | null;
  /** The vendor's output, once succeeded. */
  result: Record<string, unknown> | null;
  errorCode: string | null;
  createdAt: string;
  completedAt: string | null;
}

export interface AiTaskAccepted {
  aiTask: AiTaskView;
  operation: OperationView;
}
