import type { IdempotencyResultPolicy, JsonValue } from '@listing/idempotency';
import { IntegrityError } from '../../common/domain-errors';
import type { FeatureExecutionResult, RecordView } from './record-view';
import type { RecordsRepository } from './records.repository';

/**
 * Result policies of the records kernel: the envelope keeps references only
 * ({ recordId, revision } and, for features, executionId), and restore reads the exact revision
 * and execution the first request produced — never the current head.
 */
export function recordSnapshotPolicy(
  records: RecordsRepository,
  moduleCode: string,
): IdempotencyResultPolicy<RecordView> {
  return {
    name: 'record-snapshot-reference-v1',
    serialize: (view) => ({ recordId: view.id, revision: view.revision }),
    async restore(stored) {
      const ref = stored as { recordId: string; revision: number };
      const view = await records.findRevision(moduleCode, ref.recordId, ref.revision);
      if (!view) throw new IntegrityError('the revision of a stored result no longer exists');
      return view;
    },
  };
}

export function featureExecutionPolicy(
  records: RecordsRepository,
  moduleCode: string,
): IdempotencyResultPolicy<FeatureExecutionResult> {
  return {
    name: 'feature-execution-reference-v1',
    serialize: (r): JsonValue => ({
      recordId: r.record.id,
      revision: r.record.revision,
      executionId: r.execution.id,
    }),
    async restore(stored) {
      const ref = stored as { recordId: string; revision: number; executionId: string };
      const [record, execution] = await Promise.all([
        records.findRevision(moduleCode, ref.recordId, ref.revision),
        records.findExecution(moduleCode, ref.recordId, ref.executionId),
      ]);
      if (!record || !execution)
        throw new IntegrityError('the execution of a stored result no longer exists');
      return { record, execution };
    },
  };
}
