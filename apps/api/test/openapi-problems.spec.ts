import type { INestApplicationContext, Type } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { problemFor } from '../src/common/problem-details.filter';
import { APP_CONFIG } from '../src/config/app-config';
import { ERROR_CODES } from '../src/error-codes';
import { FAILURE_CODES } from '../src/failure-codes';
import { AuthGuard } from '../src/modules/auth/auth.guard';
import { RateLimitGuard } from '../src/modules/auth/rate-limit.guard';
import { ProductDraftsController } from '../src/modules/product-drafts/product-drafts.controller';
import { PublicationsController } from '../src/modules/publications/publications.controller';
import { OAS_3_1_DIALECT, buildOpenApiDocument, problemTypesOf } from '../src/ops/openapi/openapi.generator';

/** Idempotency settings unlike the defaults (48 h, 5000 ms, 1 s): the document states these. */
const CONFIG = {
  IDEMPOTENCY_TTL_HOURS: 72,
  IDEMPOTENCY_LOCK_TIMEOUT_MS: 3500,
  IDEMPOTENCY_RETRY_AFTER_SECONDS: 3,
};

/**
 * The generator reads controllers and the idempotency settings only: an application context that
 * holds just these.
 */
function contextOf(controllers: Type[]): INestApplicationContext {
  const modules = new Map([
    ['m', { controllers: new Map(controllers.map((c) => [c.name, { metatype: c }])) }],
  ]);
  return {
    get: (token: unknown) => {
      if (token === ModulesContainer) return modules;
      if (token === APP_CONFIG) return CONFIG;
      throw new Error('unexpected lookup');
    },
  } as unknown as INestApplicationContext;
}

interface ProblemContent {
  schema: { allOf: [unknown, { properties: { code: { enum: string[] } } }] };
  examples: Record<string, { summary: string; value: { status: number; code: string } }>;
}

describe('OpenAPI problem responses, from the merged error catalogue', () => {
  const doc = buildOpenApiDocument(contextOf([ProductDraftsController, PublicationsController]), {
    title: 'test',
    version: '1',
    authGuards: [AuthGuard],
    rateLimitGuards: [RateLimitGuard],
    errors: ERROR_CODES,
    failures: FAILURE_CODES,
  }) as {
    jsonSchemaDialect: string;
    info: { description: string };
    'x-idempotency': unknown;
    paths: Record<
      string,
      Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>
    >;
    components: {
      schemas: {
        Problem: { properties: { type: { format: string } } };
        ProblemCode: { enum: string[] };
        OperationFailureCode: { description: string; enum: string[] };
      };
    };
  };

  it('shows, under each status, an example per code of that status with its description', () => {
    let seen = 0;
    for (const operations of Object.values(doc.paths)) {
      for (const { responses } of Object.values(operations)) {
        for (const [status, response] of Object.entries(responses)) {
          const problem = response.content?.['application/problem+json'] as ProblemContent | undefined;
          if (!problem) continue;
          const codes = problem.schema.allOf[1].properties.code.enum;
          expect(Object.keys(problem.examples)).toEqual(codes);
          for (const code of codes) {
            const entry = ERROR_CODES[code as keyof typeof ERROR_CODES];
            expect({ code, status: entry.status }).toEqual({ code, status: Number(status) });
            expect(problem.examples[code]).toMatchObject({
              summary: entry.description,
              value: { status: Number(status), code, detail: entry.description },
            });
            seen++;
          }
        }
      }
    }
    expect(seen).toBeGreaterThan(50);
    // A 409 lists its several codes, not one of them for all.
    const retry = doc.paths['/v1/workspaces/{workspaceId}/publications/{publicationId}/retry']!.post!;
    const conflicts = retry.responses['409']!.content!['application/problem+json'] as ProblemContent;
    expect(Object.keys(conflicts.examples)).toEqual(
      expect.arrayContaining(['PUBLICATION_NOT_RETRYABLE', 'STORE_NOT_ACTIVE', 'CONCURRENT_UPDATE']),
    );
  });

  it('lists every catalogued code, with its status and description, in the enum and the table', () => {
    expect([...doc.components.schemas.ProblemCode.enum].sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(doc.info.description).toContain('| code | status | retryable | meaning |');
    for (const [code, { status, description }] of Object.entries(ERROR_CODES)) {
      expect(doc.info.description).toContain(`| \`${code}\` | ${status} |`);
      expect(doc.info.description).toContain(description);
    }
  });

  it('states the idempotency key retention and wait bound of the running configuration', () => {
    expect(doc['x-idempotency']).toEqual({
      header: 'Idempotency-Key',
      retentionHours: 72,
      lockTimeoutMs: 3500,
      retryAfterSeconds: 3,
    });
    expect(doc.info.description).toContain('A key is kept 72 h after its first request');
    expect(doc.info.description).toContain('waits up to 3500 ms for it');
    expect(doc.info.description).toContain('`Retry-After: 3`');
    expect(doc.info.description).not.toContain('24 h');
  });

  it("maps every code to its problems' `type`, a page of the API itself", () => {
    const types = problemTypesOf(doc);
    expect([...types.values()].map((t) => t.code).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      const { type } = problemFor(code, entry);
      expect(type).toBe(`/docs/problems/${code.toLowerCase().replace(/_/g, '-')}`);
      expect(types.get(type)).toEqual({
        code,
        type,
        title: problemFor(code, entry).title,
        status: entry.status,
        retryable: entry.retryable === true,
        description: entry.description,
      });
    }
    // A relative reference (resolved against the request URI), not an absolute URI.
    expect(doc.components.schemas.Problem.properties.type.format).toBe('uri-reference');
  });

  it("states OpenAPI 3.1's default JSON Schema dialect, the one Swagger UI renders without a warning", () => {
    expect(doc.jsonSchemaDialect).toBe(OAS_3_1_DIALECT);
    expect(OAS_3_1_DIALECT).toBe('https://spec.openapis.org/oas/3.1/dialect/base');
  });

  it('documents every code a failed operation can carry, with its message', () => {
    const schema = doc.components.schemas.OperationFailureCode;
    expect(schema.enum).toEqual(Object.keys(FAILURE_CODES).sort());
    for (const [code, message] of Object.entries(FAILURE_CODES)) {
      expect(schema.description).toContain(`| \`${code}\` | ${message} |`);
    }
    // The jobs' shared and per-capability codes are all there.
    for (const code of [
      'TASK_ABANDONED',
      'PLATFORM_UNAVAILABLE',
      'STORE_CREDENTIALS_INVALID',
      'PUBLICATION_OUTCOME_UNKNOWN',
      'SYNC_CURSOR_LOOP',
      'AI_REQUEST_REJECTED',
      'MEDIA_PROCESSING_FAILED',
      'SOURCE_TIMEOUT',
    ]) {
      expect(FAILURE_CODES).toHaveProperty(code);
    }
  });

  it("is what docs/api.md's table of operation failure codes lists", () => {
    const doc = readFileSync(path.resolve(__dirname, '..', '..', '..', 'docs', 'api.md'), 'utf8');
    const section = doc.slice(doc.indexOf('A failed operation')).split(/\n### /)[0]!;
    const listed = [...section.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map(([, code]) => code);
    expect([...new Set(listed)].sort()).toEqual(Object.keys(FAILURE_CODES).sort());
  });
});
