import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import type { z } from 'zod';
import { ValidationFailedError } from './domain-errors';
import { isStorable } from './storable-text';

/**
 * Validates and strips nothing: schemas are strict, so unknown fields are errors (422). Text that
 * PostgreSQL cannot store (a NUL character, or a lone UTF-16 surrogate, both valid in JSON) is a
 * 422 too, in every field and key, rather than a 500 from the database later.
 */
export class ZodValidationPipe<S extends z.ZodType> implements PipeTransform<unknown, z.infer<S>> {
  /** Public: the OpenAPI generator reads route schemas from the pipes. */
  constructor(readonly schema: S) {}

  transform(value: unknown, metadata?: ArgumentMetadata): z.infer<S> {
    // The root of what failed, named for where it came from: `(body)` or `(query)`.
    const root = `(${metadata?.type === 'query' ? 'query' : 'body'})`;
    const parsed = this.schema.safeParse(value);
    if (!parsed.success) {
      throw new ValidationFailedError(
        bounded(
          parsed.error.issues.map((issue) => ({
            path: issue.path.join('.') || root,
            message: issue.message,
          })),
        ),
      );
    }
    const unstorable = unstorableText(parsed.data, [], root);
    if (unstorable.length) throw new ValidationFailedError(bounded(unstorable));
    return parsed.data;
  }
}

const MAX_ISSUES = 20;
const MAX_TEXT = 200;

/**
 * An answer proportionate to a mistake: a body of 50,000 unknown keys is one issue whose message
 * would list every key. At most MAX_ISSUES issues, each path and message cut at MAX_TEXT.
 */
function bounded(issues: Array<{ path: string; message: string }>) {
  const cut = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text);
  const kept = issues.slice(0, MAX_ISSUES).map((i) => ({ path: cut(i.path), message: cut(i.message) }));
  if (issues.length > MAX_ISSUES) {
    kept.push({ path: '…', message: `${issues.length - MAX_ISSUES} more issues not listed` });
  }
  return kept;
}

const UNSTORABLE = 'contains a NUL character or an unpaired surrogate';

function unstorableText(
  value: unknown,
  path: string[],
  root: string,
): Array<{ path: string; message: string }> {
  const at = (p: string[]) => p.join('.') || root;
  if (typeof value === 'string') return isStorable(value) ? [] : [{ path: at(path), message: UNSTORABLE }];
  if (Array.isArray(value)) return value.flatMap((v, i) => unstorableText(v, [...path, String(i)], root));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, v]) => [
    ...(isStorable(key) ? [] : [{ path: at([...path, '(key)']), message: UNSTORABLE }]),
    ...unstorableText(v, [...path, key], root),
  ]);
}
