import { z } from 'zod';

/**
 * The named schemas of the API's answers. Each becomes `components/schemas/<id>` of
 * /docs/openapi.json (ops/openapi), and each view's TypeScript type is `z.output` of its
 * schema: the answer a service builds and the contract a client is generated from are one
 * definition. Responses are validated against the document in the e2e suites, so a field
 * added to a view without its schema fails there (the schemas admit no unknown property).
 */
export const apiSchemas = z.registry<{ id: string; description?: string }>();

/** Registers `schema` as the component `id`. */
export function named<T extends z.ZodType>(id: string, schema: T, description?: string): T {
  apiSchemas.add(schema, description ? { id, description } : { id });
  return schema;
}

/** A UUID as PostgreSQL writes it (any version: ids are gen_random_uuid() or derived). */
export const uuid = () => z.guid();

/** An instant as the API writes it: ISO 8601 in UTC (`Date#toISOString`). */
export const instant = () => z.iso.datetime();

/** A keyset page of the capability lists: `nextCursor` is null on the last page. */
export function pageOf<T extends z.ZodType>(id: string, item: T) {
  return named(
    id,
    z.object({
      items: z.array(item),
      nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last'),
    }),
  );
}

/** A list answered whole (no paging): `{ items }`. */
export function listOf<T extends z.ZodType>(id: string, item: T) {
  return named(id, z.object({ items: z.array(item) }));
}
