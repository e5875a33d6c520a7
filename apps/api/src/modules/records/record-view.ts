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

export interface FeatureExecutionView {
  id: string;
  featureId: string;
  mode: 'local' | 'blocked_external' | 'outbox';
  status: 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'BLOCKED';
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
