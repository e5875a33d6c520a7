import { z } from 'zod';
import { instant, named, uuid } from '../../common/api-schemas';

/** A record as the API returns it, built only from one immutable revision row. */
export interface RecordView<D = Record<string, unknown>> {
  id: string;
  moduleCode: string;
  revision: number;
  data: D;
  createdBy: string;
  /** When the record was created (immutable). */
  createdAt: string;
  /** When this revision was created. */
  revisionCreatedAt: string;
}

/** The schema of a module's records, named `id`, with its payload schema as `data`. */
export function recordViewOf<D extends z.ZodType>(id: string, data: D, description: string) {
  return named(
    id,
    z.object({
      id: uuid(),
      moduleCode: z.string(),
      revision: z.number().int().min(1).describe('Also the ETag, quoted'),
      data,
      createdBy: uuid(),
      createdAt: instant().describe('When the record was created (immutable)'),
      revisionCreatedAt: instant().describe('When this revision was created'),
    }),
    description,
  );
}

export const featureExecutionViewSchema = named(
  'FeatureExecution',
  z.object({
    id: uuid(),
    featureId: z.string(),
    mode: z.enum(['local', 'blocked_external', 'outbox']),
    status: z
      .enum(['pending', 'running', 'succeeded', 'failed', 'blocked'])
      .describe('Lower case like every other status of the API'),
    baseRevision: z.number().int(),
    resultRevision: z.number().int().nullable(),
    createdAt: instant(),
  }),
  'One run of a feature on a record',
);
/** How a feature execution is stored (feature_executions.status). */
export type StoredExecutionStatus = 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'BLOCKED';

export type FeatureExecutionView = z.output<typeof featureExecutionViewSchema>;

export interface FeatureExecutionResult<D = Record<string, unknown>> {
  record: RecordView<D>;
  execution: FeatureExecutionView;
}

/** The 201 body of a feature execution: the record as it now is, and the execution. */
export function featureExecutionResultOf<R extends z.ZodType>(id: string, record: R) {
  return named(id, z.object({ record, execution: featureExecutionViewSchema }));
}

/** The immutable snapshot stored with each revision; repeats its own coordinates. */
export interface RevisionSnapshot {
  workspaceId: string;
  moduleCode: string;
  id: string;
  revision: number;
  payload: Record<string, unknown>;
}
