/** A record as the API returns it, built only from one immutable revision row. */
export interface RecordView {
  id: string;
  moduleCode: string;
  revision: number;
  data: Record<string, unknown>;
  createdBy: string;
  /** When the record was created (immutable). */
  createdAt: string;
  /** When this revision was created. */
  revisionCreatedAt: string;
}

/** How a feature execution is stored (feature_executions.status). */
export type StoredExecutionStatus = 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'BLOCKED';

export interface FeatureExecutionView {
  id: string;
  featureId: string;
  mode: 'local' | 'blocked_external' | 'outbox';
  /** Lower case like every other status of the API (stored upper case in feature_executions). */
  status: 'pending' | 'running' | 'succeeded' | 'failed' | 'blocked';
  baseRevision: number;
  resultRevision: number | null;
  createdAt: string;
}

export interface FeatureExecutionResult {
  record: RecordView;
  execution: FeatureExecutionView;
}

/** The immutable snapshot stored with each revision; repeats its own coordinates. */
export interface RevisionSnapshot {
  workspaceId: string;
  moduleCode: string;
  id: string;
  revision: number;
  payload: Record<string, unknown>;
}
