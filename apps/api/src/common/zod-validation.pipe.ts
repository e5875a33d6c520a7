import type { PipeTransform } from '@nestjs/common';
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

  transform(value: unknown): z.infer<S> {
    const parsed = this.schema.safeParse(value);
    if (!parsed.success) {
      throw new ValidationFailedError(
        parsed.error.issues.map((issue) => ({
          path: issue.path.join('.') || '(body)',
          message: issue.message,
        })),
      );
    }
    const unstorable = unstorableText(parsed.data, []);
    if (unstorable.length) throw new ValidationFailedError(unstorable);
    return parsed.data;
  }
}

const UNSTORABLE = 'contains a NUL character or an unpaired surrogate';

function unstorableText(value: unknown, path: string[]): Array<{ path: string; message: string }> {
  const at = (p: string[]) => p.join('.') || '(body)';
  if (typeof value === 'string') return isStorable(value) ? [] : [{ path: at(path), message: UNSTORABLE }];
  if (Array.isArray(value)) return value.flatMap((v, i) => unstorableText(v, [...path, String(i)]));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, v]) => [
    ...(isStorable(key) ? [] : [{ path: at([...path, '(key)']), message: UNSTORABLE }]),
    ...unstorableText(v, [...path, key]),
  ]);
}
