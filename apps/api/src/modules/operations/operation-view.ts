export type OperationStatus = 'pending' | 'running' | 'succeeded' | 'failed';

/** What GET .../operations/{id} returns. `error` is safe for clients (code + message). */
export interface OperationView {
  id: string;
  kind: string;
  status: OperationStatus;
  resourceType: string;
  resourceId: string;
  error: { code: string; message: string } | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}
