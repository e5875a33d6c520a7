/**
 * Error catalogues: each feature declares the HTTP error codes it answers, with their status and
 * what they mean for the client, next to the DomainError classes that throw them:
 *
 *     export const STORE_ERRORS = defineErrors({
 *       STORE_NOT_ACTIVE: { status: 409, description: 'the store must be active for this command' },
 *     });
 *
 *     export class StoreNotActiveError extends DomainError<typeof STORE_ERRORS> {
 *       readonly code = 'STORE_NOT_ACTIVE'; // a code that is not in STORE_ERRORS does not compile
 *     }
 *
 * The application merges every catalogue once (src/error-codes.ts); ProblemDetailsFilter and the
 * OpenAPI document read that merged table. Nothing here knows a feature.
 */

/** A status an error may answer: the 4xx and 5xx codes of the IANA HTTP status registry. */
export type HttpErrorStatus =
  | 400
  | 401
  | 402
  | 403
  | 404
  | 405
  | 406
  | 407
  | 408
  | 409
  | 410
  | 411
  | 412
  | 413
  | 414
  | 415
  | 416
  | 417
  | 421
  | 422
  | 423
  | 424
  | 425
  | 426
  | 428
  | 429
  | 431
  | 451
  | 500
  | 501
  | 502
  | 503
  | 504
  | 505
  | 506
  | 507
  | 508
  | 510
  | 511;

export interface ErrorEntry {
  /** The HTTP status this code answers. */
  readonly status: HttpErrorStatus;
  /** What the code means for the client (the OpenAPI document and its table of codes show it). */
  readonly description: string;
  /** Retrying later can succeed: the problem body says `retryable: true`. */
  readonly retryable?: boolean;
}

/** Code → entry. */
export type ErrorCatalogue = Readonly<Record<string, ErrorEntry>>;

/** The codes of a catalogue. */
export type CodeOf<C extends ErrorCatalogue> = keyof C & string;

/**
 * What defineErrors checks of each entry beyond ErrorEntry: a description that is the literal ''
 * (one that is not a literal is checked at load) and unknown keys (`retriable: true`) are refused.
 */
type Checked<E> = ErrorEntry & {
  readonly description: E extends { description: '' } ? 'a description must not be empty' : string;
} & { readonly [P in Exclude<keyof E, keyof ErrorEntry>]: 'unknown key of an error entry' };

const CODE_RE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;
const defined = new WeakSet<object>();

/**
 * A feature's catalogue. `status` and `description` are required by the type (and checked again
 * when the module loads: a start-up error, never a silent 500).
 */
export function defineErrors<const T extends { readonly [K in keyof T]: Checked<T[K]> }>(
  catalogue: T,
): Readonly<T> {
  for (const [code, entry] of Object.entries(catalogue as Record<string, ErrorEntry>)) {
    if (!CODE_RE.test(code)) throw new Error(`error code ${code} is not UPPER_SNAKE_CASE`);
    const { status, description } = entry ?? {};
    if (!Number.isInteger(status) || status < 400 || status > 599) {
      throw new Error(`error code ${code}: status ${String(status)} is not a 4xx or 5xx status`);
    }
    if (typeof description !== 'string' || description.trim() === '') {
      throw new Error(`error code ${code} has no description`);
    }
  }
  const frozen = Object.freeze({ ...catalogue }) as Readonly<T>;
  defined.add(frozen);
  return frozen;
}

/** Whether a value is a catalogue made by defineErrors (the tests find every one of them). */
export function isErrorCatalogue(value: unknown): value is ErrorCatalogue {
  return typeof value === 'object' && value !== null && defined.has(value);
}

type Repeated<Cs, Seen = never> = Cs extends readonly [infer H, ...infer R]
  ? Extract<keyof H, Seen> | Repeated<R, Seen | keyof H>
  : never;
type Merged<Cs> = Cs extends readonly [infer H, ...infer R] ? H & Merged<R> : unknown;
type MergedCatalogue<Cs> = { readonly [K in keyof Merged<Cs>]: ErrorEntry };
type NoRepeatedCode<Cs> = [Repeated<Cs>] extends [never]
  ? unknown
  : { readonly 'error code declared twice': Repeated<Cs> };

/**
 * One table from the features' catalogues. A code declared by two catalogues does not compile
 * (and throws, should the types have been bypassed).
 */
export function mergeCatalogues<const Cs extends readonly ErrorCatalogue[]>(
  ...catalogues: Cs & NoInfer<NoRepeatedCode<Cs>>
): MergedCatalogue<Cs> {
  const merged: Record<string, ErrorEntry> = {};
  for (const catalogue of catalogues as readonly ErrorCatalogue[]) {
    if (!isErrorCatalogue(catalogue)) {
      throw new Error('mergeCatalogues takes catalogues made by defineErrors');
    }
    for (const [code, entry] of Object.entries(catalogue)) {
      if (Object.hasOwn(merged, code)) throw new Error(`error code ${code} is declared twice`);
      merged[code] = entry;
    }
  }
  const frozen = Object.freeze(merged);
  defined.add(frozen);
  return frozen as MergedCatalogue<Cs>;
}

/** The entry of a code that is only known at run time (an error's `code`), if it is catalogued. */
export function entryOf(catalogue: ErrorCatalogue, code: string): ErrorEntry | undefined {
  return Object.hasOwn(catalogue, code) ? catalogue[code] : undefined;
}

/**
 * Typed domain errors with stable string codes. Services throw these; ProblemDetailsFilter maps
 * each code to its catalogue entry (status, retryable). `Catalogue` names the catalogue the
 * subclass's `code` must belong to.
 */
export abstract class DomainError<Catalogue extends ErrorCatalogue> extends Error {
  abstract readonly code: CodeOf<Catalogue>;
  /** Extra, safe fields for the problem+json body. */
  readonly extensions: Record<string, unknown> = {};
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Any domain error, whatever its catalogue (what a filter or a pipe's parameter takes). */
export type AnyDomainError = DomainError<ErrorCatalogue>;
