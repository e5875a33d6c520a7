/** JSON that may be persisted in a result envelope. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * How one operation's first result is stored and restored.
 *
 * `serialize` keeps references only (ids, revision numbers): never titles, payloads, feature
 * input/output, credentials, tokens or provider responses. `restore` rebuilds the exact first
 * result from immutable data (a revision, an execution) inside the caller's workspace and never
 * reads the current head. A new name (`<name>-v<n>`) means new restore semantics: a stored
 * envelope whose policy name differs fails closed.
 */
export interface IdempotencyResultPolicy<R> {
  readonly name: string;
  serialize(result: R): JsonValue;
  restore(stored: JsonValue): Promise<R>;
}

export const ENVELOPE_SCHEMA_VERSION = 1;

export interface ResultEnvelope {
  schemaVersion: typeof ENVELOPE_SCHEMA_VERSION;
  policy: string;
  result: JsonValue;
}

export function isResultEnvelope(value: unknown): value is ResultEnvelope {
  const v = value as Partial<ResultEnvelope> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.policy === 'string' &&
    'result' in v &&
    typeof v.schemaVersion === 'number'
  );
}
