import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Logger } from '@nestjs/common';
import { IdempotencyKeyReusedError, IdempotencyRequestInProgressError } from '@listing/idempotency';
import { HTTP_ERRORS } from '../src/common/domain-errors';
import {
  DomainError,
  defineErrors,
  entryOf,
  isErrorCatalogue,
  mergeCatalogues,
  type ErrorCatalogue,
} from '../src/common/error-catalogue';
import { ProblemDetailsFilter } from '../src/common/problem-details.filter';
import { ERROR_CODES } from '../src/error-codes';
import { WorkspaceNotFoundError } from '../src/modules/auth/auth.errors';
import { MaterialTransferExistsError } from '../src/modules/material-transfers/material-transfers.errors';
import { RevisionMismatchError } from '../src/modules/records/records.errors';
import { StoreNotActiveError } from '../src/modules/stores/stores.errors';
import { answer } from './support/problem-filter';

const SRC = path.resolve(__dirname, '..', 'src');

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(file);
    else if (entry.name.endsWith('.ts')) yield file;
  }
}

describe('the merged error table (src/error-codes.ts)', () => {
  it('gives every code a 4xx/5xx status and a description', () => {
    const codes = Object.entries(ERROR_CODES);
    expect(codes.length).toBeGreaterThan(40);
    for (const [code, entry] of codes) {
      expect({
        code,
        ok: Number.isInteger(entry.status) && entry.status >= 400 && entry.status <= 599,
      }).toEqual({
        code,
        ok: true,
      });
      expect({
        code,
        description: typeof entry.description === 'string' && entry.description.trim() !== '',
      }).toEqual({ code, description: true });
      expect([undefined, true, false]).toContain(entry.retryable);
    }
  });

  it('keeps the status and retryable flag every code had before the catalogues', () => {
    // The HTTP contract as it was (problem-details.filter.ts's STATUS and RETRYABLE); a status
    // change is a breaking change for clients, never a side effect.
    const before: Record<string, number> = {
      VALIDATION_FAILED: 422,
      INVALID_JSON: 400,
      BAD_REQUEST: 400,
      UNSUPPORTED_MEDIA_TYPE: 415,
      PAYLOAD_TOO_LARGE: 413,
      URI_TOO_LONG: 414,
      REQUEST_TIMEOUT: 408,
      HEADERS_TOO_LARGE: 431,
      UNAUTHENTICATED: 401,
      INVALID_CREDENTIALS: 401,
      INVALID_REFRESH_TOKEN: 401,
      FORBIDDEN: 403,
      MEMBER_EXISTS: 409,
      INVITATION_NOT_FOUND: 404,
      WORKSPACE_NOT_FOUND: 404,
      RESOURCE_NOT_FOUND: 404,
      FEATURE_NOT_FOUND: 404,
      ROUTE_NOT_FOUND: 404,
      METHOD_NOT_ALLOWED: 405,
      EMAIL_TAKEN: 409,
      RATE_LIMITED: 429,
      REVISION_MISMATCH: 412,
      IF_MATCH_REQUIRED: 428,
      IF_MATCH_INVALID: 400,
      IDEMPOTENCY_KEY_REQUIRED: 400,
      IDEMPOTENCY_KEY_INVALID: 400,
      IDEMPOTENCY_SCOPE_CONFLICT: 409,
      IDEMPOTENCY_KEY_REUSED: 409,
      IDEMPOTENCY_REQUEST_IN_PROGRESS: 409,
      IDEMPOTENCY_REPLAY_UNAVAILABLE: 409,
      CONCURRENT_UPDATE: 409,
      STORE_ALREADY_CONNECTED: 409,
      STORE_NOT_ACTIVE: 409,
      ALREADY_PUBLISHED: 409,
      PUBLICATION_NOT_RETRYABLE: 409,
      SYNC_ALREADY_ACTIVE: 409,
      MEDIA_TOO_LARGE: 413,
      MEDIA_TYPE_UNSUPPORTED: 415,
      MEDIA_TYPE_MISMATCH: 422,
      MEDIA_SIZE_MISMATCH: 422,
      MEDIA_STATE_CONFLICT: 409,
      LENGTH_REQUIRED: 411,
      SOURCE_NOT_ALLOWED: 422,
      MATERIAL_TRANSFER_EXISTS: 409,
      SERVICE_UNAVAILABLE: 503,
      INTEGRITY_VIOLATION: 500,
      INTERNAL_ERROR: 500,
      // Thrown by @listing/idempotency but missing from the old table: they were 500s by default.
      IDEMPOTENCY_RECORD_LOST: 500,
      IDEMPOTENCY_CONFIG_INVALID: 500,
    };
    const retryable = [
      'IDEMPOTENCY_REQUEST_IN_PROGRESS',
      'RATE_LIMITED',
      'SERVICE_UNAVAILABLE',
      'CONCURRENT_UPDATE',
    ];
    const now = Object.fromEntries(
      Object.keys(before).map((code) => [code, ERROR_CODES[code as keyof typeof ERROR_CODES]?.status]),
    );
    expect(now).toEqual(before);
    expect(
      Object.entries(ERROR_CODES)
        .filter(([, entry]) => entry.retryable)
        .map(([code]) => code)
        .sort(),
    ).toEqual([...retryable].sort());
  });

  it('holds every catalogue declared under src/ (none is forgotten in error-codes.ts)', async () => {
    const declaring = [...sourceFiles(SRC)].filter((file) =>
      /\bdefineErrors\(/.test(readFileSync(file, 'utf8')),
    );
    const catalogues: Array<{ name: string; catalogue: ErrorCatalogue }> = [];
    for (const file of declaring) {
      for (const [name, value] of Object.entries((await import(file)) as Record<string, unknown>)) {
        if (isErrorCatalogue(value))
          catalogues.push({ name: `${path.relative(SRC, file)} ${name}`, catalogue: value });
      }
    }
    // common's and the features' (auth, workspaces, idempotency, records, product drafts, stores...)
    expect(catalogues.length).toBeGreaterThanOrEqual(11);
    for (const { name, catalogue } of catalogues) {
      if (catalogue === ERROR_CODES) continue;
      for (const [code, entry] of Object.entries(catalogue)) {
        expect({ from: name, code, merged: entryOf(ERROR_CODES, code) === entry }).toEqual({
          from: name,
          code,
          merged: true,
        });
      }
    }
  });

  it("is what docs/api.md's table of error codes lists, each code under its status", () => {
    const doc = readFileSync(path.resolve(__dirname, '..', '..', '..', 'docs', 'api.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### Error codes')).split(/\n## /)[0]!;
    const listed: Record<string, number> = {};
    for (const [, status, codes] of section.matchAll(/^\| (\d{3}) +\|(.*)\|$/gm)) {
      for (const [, code] of codes!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) listed[code!] = Number(status);
    }
    const catalogued = Object.fromEntries(
      Object.entries(ERROR_CODES).map(([code, { status }]) => [code, status]),
    );
    expect(listed).toEqual(catalogued);
  });

  it('refuses a code declared twice, and entries that bypassed the types, when the module loads', () => {
    const a = defineErrors({ SAME_CODE: { status: 409, description: 'first' } });
    const b = defineErrors({ SAME_CODE: { status: 410, description: 'second' } });
    expect(() => mergeCatalogues(a, b as never)).toThrow('error code SAME_CODE is declared twice');
    expect(() => defineErrors({ NO_STATUS: { description: 'x' } } as never)).toThrow(/not a 4xx or 5xx/);
    expect(() => defineErrors({ BLANK: { status: 400, description: '  ' as string } })).toThrow(
      /no description/,
    );
    expect(() => defineErrors({ lower_case: { status: 400, description: 'x' } })).toThrow(/UPPER_SNAKE_CASE/);
    expect(() => mergeCatalogues({ NOT_DEFINED: { status: 400, description: 'x' } })).toThrow(/defineErrors/);
  });
});

describe('ProblemDetailsFilter with the merged table', () => {
  it("answers a feature's DomainError with its catalogued status, code and extensions", () => {
    expect(answer(new StoreNotActiveError('pending'))).toMatchObject({
      status: 409,
      body: { status: 409, code: 'STORE_NOT_ACTIVE', storeStatus: 'pending', title: 'Store not active' },
    });
    expect(answer(new RevisionMismatchError(3))).toMatchObject({
      status: 412,
      body: { code: 'REVISION_MISMATCH', currentRevision: 3 },
    });
    expect(answer(new WorkspaceNotFoundError())).toMatchObject({
      status: 404,
      body: { code: 'WORKSPACE_NOT_FOUND' },
    });
    expect(answer(new MaterialTransferExistsError('t', 'o')).body).toMatchObject({
      status: 409,
      transferId: 't',
      operationId: 'o',
    });
    expect(answer(new StoreNotActiveError('pending')).body).not.toHaveProperty('retryable');
  });

  it("answers the idempotency engine's errors from its catalogue, retryable where it says so", () => {
    const busy = answer(new IdempotencyRequestInProgressError(2));
    expect(busy).toMatchObject({
      status: 409,
      body: { code: 'IDEMPOTENCY_REQUEST_IN_PROGRESS', retryable: true },
    });
    expect(busy.headers['retry-after']).toBe('2');
    expect(answer(new IdempotencyKeyReusedError())).toMatchObject({
      status: 409,
      body: { code: 'IDEMPOTENCY_KEY_REUSED' },
    });
  });

  it('says so when an error carries a code of no merged catalogue (a 500 that is logged, not silent)', () => {
    const FORGOTTEN = defineErrors({ FORGOTTEN_CODE: { status: 409, description: 'never merged' } });
    class ForgottenError extends DomainError<typeof FORGOTTEN> {
      readonly code = 'FORGOTTEN_CODE';
    }
    expect(isErrorCatalogue(FORGOTTEN)).toBe(true); // a real catalogue, only never merged
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      const sent = answer(new ForgottenError('x'));
      expect(sent).toMatchObject({ status: 500, body: { code: 'INTERNAL_ERROR' } });
      expect(logged.mock.calls.map(([message]) => String(message))).toContainEqual(
        expect.stringContaining('error code FORGOTTEN_CODE is in no catalogue'),
      );
    } finally {
      logged.mockRestore();
    }
  });

  it('refuses a table without the cross-cutting codes it answers itself', () => {
    expect(
      () =>
        new ProblemDetailsFilter(mergeCatalogues(defineErrors({ ONLY: { status: 400, description: 'x' } }))),
    ).toThrow(/lacks HTTP_ERRORS/);
    expect(() => new ProblemDetailsFilter(HTTP_ERRORS)).not.toThrow();
  });
});
