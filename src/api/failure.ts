// A refusal in the contract's terms (docs/contract.md §3 "Errors"): one of the catalog's
// codes, the message, and the error object's extra fields. It says nothing of HTTP: the
// node's services (src/server) refuse with it in their Result (service-result.ts), and the
// API maps it at its edge to a status, a body and a Retry-After header (failure-edge.ts,
// errors.ts ApiError.of), as fastify's error catalog does.
// src/server never imports errors.ts (scripts/layers.mjs: the api/errors layer).

/** every code a client can see; errors.ts ERROR_CATALOG gives each its status */
export type FailureCode =
  | 'invalid_request' | 'unauthenticated' | 'permission_denied' | 'session_not_found' | 'not_found'
  | 'lock_held' | 'not_holder' | 'limit_mismatch' | 'semaphore_full' | 'deadlock' | 'conflict'
  | 'compacted' | 'payload_too_large' | 'unsupported_media_type' | 'idempotency_key_reused'
  | 'too_many_requests' | 'internal' | 'unavailable' | 'timeout';

export interface FailureOptions {
  /** extra top-level fields of the error object, e.g. `{ holder }` for lock_held */
  details?: Record<string, unknown>;
  /** seconds the client should wait before retrying (the edge defaults 429 and 503 to 1) */
  retryAfterS?: number;
  cause?: unknown;
}

export class Failure extends Error {
  readonly code: FailureCode;
  readonly details?: Record<string, unknown>;
  readonly retryAfterS?: number;

  constructor(code: FailureCode, message: string, opts: FailureOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'Failure';
    this.code = code;
    if (opts.details !== undefined) this.details = opts.details;
    if (opts.retryAfterS !== undefined) this.retryAfterS = opts.retryAfterS;
  }
}

export function isFailure(e: unknown): e is Failure {
  return e instanceof Failure;
}
