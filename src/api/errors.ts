// The one error catalog of the REST API (docs/contract.md §3 "Errors"): every code a client
// can see, its HTTP status and a default message. Routes throw `ApiError`; the node's
// services refuse with a `Failure` (failure.ts: the code without HTTP), which ApiError.of
// maps here (called by failure-edge.ts); the server's error handler renders either as
// `{ error: { code, message, ...details } }`.
// Keeping codes, statuses and Retry-After in one table (after fastify lib/errors.js) means a
// code can never be answered with two different statuses.
import { Failure, type FailureCode, type FailureOptions } from './failure.js';

export const ERROR_CATALOG = {
  invalid_request: { status: 400, message: 'the request is invalid' },
  unauthenticated: { status: 401, message: 'a valid bearer token is required' },
  permission_denied: { status: 403, message: 'the token has no right to do this' },
  session_not_found: { status: 404, message: 'unknown or expired session' },
  not_found: { status: 404, message: 'not found' },
  lock_held: { status: 409, message: 'the lock is held by another session' },
  not_holder: { status: 409, message: 'the session does not hold the lock' },
  /** a semaphore acquire named another limit than the one in force (body: limit) */
  limit_mismatch: { status: 409, message: 'the semaphore has another limit' },
  /** a semaphore had no room and wait_ms ran out (body: in_use, limit) */
  semaphore_full: { status: 409, message: 'the semaphore is full' },
  /** a wait that would close a cycle in the wait-for graph (docs/contract.md §5; body: cycle) */
  deadlock: { status: 409, message: 'the wait would close a cycle of waiting sessions (a deadlock)' },
  /** a membership change is already in flight (one at a time, thesis §4.1) */
  conflict: { status: 409, message: 'a conflicting operation is in progress' },
  /** a watch resume point older than the events the node keeps (body: compacted_index) */
  compacted: { status: 410, message: 'the events after that index are no longer kept' },
  payload_too_large: { status: 413, message: 'the body is over 64 KiB' },
  unsupported_media_type: { status: 415, message: 'the body must be application/json' },
  /** the Idempotency-Key was first used for another request; nothing was applied */
  idempotency_key_reused: { status: 422, message: 'the Idempotency-Key was first used for another request; nothing was applied' },
  too_many_requests: { status: 429, message: 'a configured limit was reached' },
  /** beyond the contract: a bug or an unexpected failure. Never a crash. */
  internal: { status: 500, message: 'internal error' },
  unavailable: { status: 503, message: 'no leader known or no quorum; nothing was applied' },
  timeout: { status: 504, message: 'the outcome is unknown; retry with the same Idempotency-Key' },
} as const satisfies Record<FailureCode, { status: number; message: string }>;

export type ErrorCode = FailureCode;

/** Codes that always carry a Retry-After header (spec: 429 and 503). */
const RETRY_AFTER_DEFAULT_S: Partial<Record<ErrorCode, number>> = { too_many_requests: 1, unavailable: 1 };

export type ApiErrorOptions = FailureOptions;

/** A Failure with its HTTP status: what the API answers. */
export class ApiError extends Failure {
  readonly status: number;

  constructor(code: ErrorCode, message?: string, opts: ApiErrorOptions = {}) {
    const retry = opts.retryAfterS ?? RETRY_AFTER_DEFAULT_S[code];
    super(code, message ?? ERROR_CATALOG[code].message, { ...opts, ...(retry !== undefined ? { retryAfterS: Math.max(1, Math.ceil(retry)) } : {}) });
    this.name = 'ApiError';
    this.status = ERROR_CATALOG[code].status;
  }

  /** the edge's mapping of a service's Failure: same code, message and details; the
   *  catalog's status; Retry-After as asked or the catalog's default */
  static of(f: Failure): ApiError {
    if (f instanceof ApiError) return f;
    const opts: ApiErrorOptions = { cause: f.cause };
    if (f.details !== undefined) opts.details = f.details;
    if (f.retryAfterS !== undefined) opts.retryAfterS = f.retryAfterS;
    return new ApiError(f.code, f.message, opts);
  }

  /** The wire shape. `details` never overrides code/message (a detail named `code` is dropped). */
  toBody(): { error: Record<string, unknown> & { code: ErrorCode; message: string } } {
    return { error: Object.assign({}, this.details, { code: this.code, message: this.message }) };
  }
}

/** Shorthand for the most common error: a field failed validation. */
export function invalid(field: string, problem: string): ApiError {
  return new ApiError('invalid_request', `${field}: ${problem}`);
}
