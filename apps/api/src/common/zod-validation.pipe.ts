import type { PipeTransform } from '@nestjs/common';
import type { z } from 'zod';
import { ValidationFailedError } from './domain-errors';

/** Validates and strips nothing: schemas are strict, so unknown fields are errors (422). */
export class ZodValidationPipe<S extends z.ZodType> implements PipeTransform<unknown, z.infer<S>> {
  /** Public: the OpenAPI generator reads route schemas from the pipes. */
  constructor(readonly schema: S) {}

  transform(value: unknown): z.infer<S> {
    const parsed = this.schema.safeParse(value);
    if (parsed.success) return parsed.data;
    throw new ValidationFailedError(
      parsed.error.issues.map((issue) => ({
        path: issue.path.join('.') || '(body)',
        message: issue.message,
      })),
    );
  }
}
