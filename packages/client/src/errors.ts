// Typed errors of the SDK. Every error a caller can see is a RaftlockError with the
// contract's `code` (docs/contract.md §3 "Errors"), the HTTP status when there was one, and the
// endpoint that answered, so a message can say where it failed. Callers branch with
// `instanceof` (LockHeldError, NotHolderError, …) rather than on strings.

export interface HolderInfo {
  sessionId: string;
  owner: string;
  fencingToken: number;
}

export interface RaftlockErrorOptions {
  /** HTTP status of the answer, when the server answered */
  status?: number;
  /** the API URL that produced this error */
  endpoint?: string;
  cause?: unknown;
}

export class RaftlockError extends Error {
  readonly code: string;
  readonly status: number | undefined;
  readonly endpoint: string | undefined;

  constructor(code: string, message: string, opts: RaftlockErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'RaftlockError';
    this.code = code;
    this.status = opts.status;
    this.endpoint = opts.endpoint;
  }
}

/** one lock that kept a lock set from being granted (docs/contract.md §5 "Lock sets") */
export interface BlockedLock {
  name: string;
  /** its exclusive holder, when it has one */
  holder?: HolderInfo;
}

/** 409 lock_held: another session holds the lock and the wait (if any) ran out. */
export class LockHeldError extends RaftlockError {
  /** absent when the lock is in lock-delay after its holder's session expired */
  readonly holder: HolderInfo | undefined;
  /** a lost campaign: the election's leader (null while none leads); undefined otherwise */
  readonly leader: { sessionId: string; value: string; fencingToken: number } | null | undefined;
  /** an acquire-all: each lock that kept the set from being granted; undefined otherwise */
  readonly blocked: BlockedLock[] | undefined;
  constructor(message: string, holder: HolderInfo | undefined, opts: RaftlockErrorOptions & { leader?: { sessionId: string; value: string; fencingToken: number } | null; blocked?: BlockedLock[] } = {}) {
    const { leader, blocked, ...rest } = opts;
    super('lock_held', message, rest);
    this.name = 'LockHeldError';
    this.holder = holder;
    this.leader = leader;
    this.blocked = blocked;
  }
}

/** one step of a deadlock: this session waits on `name` for the next step's session */
export interface DeadlockStep {
  sessionId: string;
  name: string;
  /** 'semaphore' when `name` is a semaphore's */
  kind?: 'semaphore';
}

/**
 * 409 deadlock (docs/contract.md §5 "Deadlock detection"): waiting would have closed a cycle
 * of sessions waiting for each other, so the server refused the wait at once and changed
 * nothing (any lock this session holds is still held). `cycle` starts with this request's
 * session. Release what you hold and try again (or take the locks together: lockAll).
 */
export class DeadlockError extends RaftlockError {
  readonly cycle: DeadlockStep[];
  constructor(message: string, cycle: DeadlockStep[], opts: RaftlockErrorOptions = {}) {
    super('deadlock', message, opts);
    this.name = 'DeadlockError';
    this.cycle = cycle;
  }
}

/** 409 not_holder: renew/release by a session that does not hold the lock, or a stale token. */
export class NotHolderError extends RaftlockError {
  constructor(message: string, opts: RaftlockErrorOptions = {}) {
    super('not_holder', message, opts);
    this.name = 'NotHolderError';
  }
}

/** 404 session_not_found: the session is unknown or has expired (its locks are gone). */
export class SessionNotFoundError extends RaftlockError {
  constructor(message: string, opts: RaftlockErrorOptions = {}) {
    super('session_not_found', message, opts);
    this.name = 'SessionNotFoundError';
  }
}

/**
 * The cluster could not be reached or had no leader for the whole retry budget (503,
 * connection errors, 429). Nothing is known to have been applied — except for the
 * subclass OutcomeUnknownError.
 */
export class UnavailableError extends RaftlockError {
  constructor(message: string, opts: RaftlockErrorOptions & { code?: string } = {}) {
    super(opts.code ?? 'unavailable', message, opts);
    this.name = 'UnavailableError';
  }
}

/** 429 too_many_requests that persisted through the retry budget. */
export class TooManyRequestsError extends UnavailableError {
  constructor(message: string, opts: RaftlockErrorOptions = {}) {
    super(message, { ...opts, code: 'too_many_requests' });
    this.name = 'TooManyRequestsError';
  }
}

/**
 * A mutation was sent but never answered (504, or the connection broke after sending)
 * through the whole retry budget: it may or may not have been applied. Retrying it with
 * the same Idempotency-Key (`idempotencyKey`) is safe.
 */
export class OutcomeUnknownError extends UnavailableError {
  readonly idempotencyKey: string | undefined;
  constructor(message: string, idempotencyKey: string | undefined, opts: RaftlockErrorOptions = {}) {
    super(message, { ...opts, code: 'timeout' });
    this.name = 'OutcomeUnknownError';
    this.idempotencyKey = idempotencyKey;
  }
}

/**
 * 422 idempotency_key_reused: the Idempotency-Key was first used for another request —
 * another token, operation, name or body — and the server applied nothing. Never retried:
 * the key answers its first request only, so a new request needs a new key (or none: the
 * SDK draws one per change). `idempotencyKey` is the key that was refused.
 */
export class IdempotencyKeyReusedError extends RaftlockError {
  readonly idempotencyKey: string | undefined;
  constructor(message: string, idempotencyKey: string | undefined, opts: RaftlockErrorOptions = {}) {
    super('idempotency_key_reused', message, opts);
    this.name = 'IdempotencyKeyReusedError';
    this.idempotencyKey = idempotencyKey;
  }
}

/** 400/413/415: the request itself is wrong; retrying cannot help. */
export class InvalidRequestError extends RaftlockError {
  constructor(code: string, message: string, opts: RaftlockErrorOptions = {}) {
    super(code, message, opts);
    this.name = 'InvalidRequestError';
  }
}

/** 401 unauthenticated / 403 permission_denied. */
export class PermissionDeniedError extends RaftlockError {
  constructor(code: string, message: string, opts: RaftlockErrorOptions = {}) {
    super(code, message, opts);
    this.name = 'PermissionDeniedError';
  }
}

/**
 * The client can no longer prove that its session (and so every lock in it) is alive:
 * no keepalive was acknowledged in time, the server said the session is gone, or the
 * session was closed. Used as the AbortSignal reason of sessions and locks.
 */
export class SessionLostError extends RaftlockError {
  readonly sessionId: string;
  constructor(sessionId: string, message: string, opts: RaftlockErrorOptions = {}) {
    super('session_lost', message, opts);
    this.name = 'SessionLostError';
    this.sessionId = sessionId;
  }
}

/** A lock that can no longer be proven held (its session was lost, or it was released). */
export class LockLostError extends RaftlockError {
  readonly lockName: string;
  readonly fencingToken: number;
  /** withLock: the callback's value, when it resolved after the lock was lost */
  result?: unknown;
  constructor(lockName: string, fencingToken: number, message: string, opts: RaftlockErrorOptions = {}) {
    super('lock_lost', message, opts);
    this.name = 'LockLostError';
    this.lockName = lockName;
    this.fencingToken = fencingToken;
  }
}

/** 409 semaphore_full: the semaphore had no room for the permits and the wait (if any) ran out. */
export class SemaphoreFullError extends RaftlockError {
  /** permits in use when the wait ended (undefined when the answer did not say) */
  readonly inUse: number | undefined;
  readonly limit: number | undefined;
  constructor(message: string, inUse: number | undefined, limit: number | undefined, opts: RaftlockErrorOptions = {}) {
    super('semaphore_full', message, opts);
    this.name = 'SemaphoreFullError';
    this.inUse = inUse;
    this.limit = limit;
  }
}

/** 409 limit_mismatch: the semaphore has holders or waiters under another limit (`limit`). */
export class LimitMismatchError extends RaftlockError {
  readonly limit: number | undefined;
  constructor(message: string, limit: number | undefined, opts: RaftlockErrorOptions = {}) {
    super('limit_mismatch', message, opts);
    this.name = 'LimitMismatchError';
    this.limit = limit;
  }
}

/** 410 compacted: a watch resume point older than every endpoint still keeps
 *  (`compactedIndex`: the oldest index after which the answering node can resume). Open
 *  the watch again without `fromIndex` for the current state. */
export class CompactedError extends RaftlockError {
  readonly compactedIndex: number | undefined;
  constructor(message: string, compactedIndex: number | undefined, opts: RaftlockErrorOptions = {}) {
    super('compacted', message, opts);
    this.name = 'CompactedError';
    this.compactedIndex = compactedIndex;
  }
}

/** Decodes the contract's `holder` object ({ session_id, owner, fencing_token }). */
export function decodeHolder(v: unknown): HolderInfo | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const h = v as Record<string, unknown>;
  if (typeof h.session_id !== 'string' || typeof h.fencing_token !== 'number') return undefined;
  return { sessionId: h.session_id, owner: typeof h.owner === 'string' ? h.owner : '', fencingToken: h.fencing_token };
}

/**
 * Maps one error answer `{ error: { code, message, … } }` to its typed error. Unknown or
 * malformed bodies still give a RaftlockError naming the status, never a crash.
 * `idempotencyKey`: the key the request carried (named by IdempotencyKeyReusedError).
 */
export function errorFromResponse(status: number, body: unknown, endpoint: string, idempotencyKey?: string): RaftlockError {
  const err = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  const e = typeof err === 'object' && err !== null ? (err as Record<string, unknown>) : {};
  const code = typeof e.code === 'string' ? e.code : statusCode(status);
  const serverMsg = typeof e.message === 'string' ? e.message : `HTTP ${status}`;
  const message = `${endpoint}: ${serverMsg}`;
  const opts = { status, endpoint };
  switch (code) {
    case 'lock_held':
      return new LockHeldError(message, decodeHolder(e.holder), { ...opts, ...leaderOf(e.leader), ...blockedOf(e.blocked) });
    case 'deadlock':
      return new DeadlockError(message, cycleOf(e.cycle), opts);
    case 'not_holder':
      return new NotHolderError(message, opts);
    case 'semaphore_full':
      return new SemaphoreFullError(message, count(e.in_use), count(e.limit), opts);
    case 'limit_mismatch':
      return new LimitMismatchError(message, count(e.limit), opts);
    case 'session_not_found':
      return new SessionNotFoundError(message, opts);
    case 'compacted':
      return new CompactedError(message, count(e.compacted_index), opts);
    case 'idempotency_key_reused':
      return new IdempotencyKeyReusedError(message, idempotencyKey, opts);
    case 'unavailable':
    case 'request_timeout': // 408: the request did not arrive whole; nothing was applied
      return new UnavailableError(message, opts);
    case 'too_many_requests':
      return new TooManyRequestsError(message, opts);
    case 'timeout':
      return new OutcomeUnknownError(message, undefined, opts);
    case 'invalid_request':
    case 'payload_too_large':
    case 'unsupported_media_type':
      return new InvalidRequestError(code, message, opts);
    case 'unauthenticated':
    case 'permission_denied':
      return new PermissionDeniedError(code, message, opts);
    default:
      return new RaftlockError(code, message, opts);
  }
}

/** the `blocked` list of an acquire-all's lock_held, as an option */
function blockedOf(v: unknown): { blocked?: BlockedLock[] } {
  if (!Array.isArray(v)) return {};
  const out: BlockedLock[] = [];
  for (const x of v) {
    if (typeof x !== 'object' || x === null || typeof (x as { name?: unknown }).name !== 'string') continue;
    const holder = decodeHolder((x as { holder?: unknown }).holder);
    out.push(holder ? { name: (x as { name: string }).name, holder } : { name: (x as { name: string }).name });
  }
  return { blocked: out };
}

/** a deadlock's `cycle` (malformed steps are dropped, never a crash) */
function cycleOf(v: unknown): DeadlockStep[] {
  if (!Array.isArray(v)) return [];
  const out: DeadlockStep[] = [];
  for (const x of v) {
    const o = typeof x === 'object' && x !== null ? (x as Record<string, unknown>) : {};
    if (typeof o.session_id !== 'string' || typeof o.name !== 'string') continue;
    out.push(o.kind === 'semaphore' ? { sessionId: o.session_id, name: o.name, kind: 'semaphore' } : { sessionId: o.session_id, name: o.name });
  }
  return out;
}

/** the `leader` of a lost campaign's lock_held (null: none leads), as an option */
function leaderOf(v: unknown): { leader?: { sessionId: string; value: string; fencingToken: number } | null } {
  if (v === null) return { leader: null };
  if (typeof v !== 'object' || v === undefined) return {};
  const o = v as Record<string, unknown>;
  if (typeof o.session_id !== 'string' || typeof o.value !== 'string' || typeof o.fencing_token !== 'number') return {};
  return { leader: { sessionId: o.session_id, value: o.value, fencingToken: o.fencing_token } };
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

/** The code to assume when an error answer has no parsable body (a proxy, a crash page). */
function statusCode(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request';
    case 401:
      return 'unauthenticated';
    case 403:
      return 'permission_denied';
    case 404:
      return 'not_found';
    case 408:
      return 'request_timeout';
    case 413:
      return 'payload_too_large';
    case 415:
      return 'unsupported_media_type';
    case 429:
      return 'too_many_requests';
    case 503:
      return 'unavailable';
    case 504:
      return 'timeout';
    default:
      return status >= 500 ? 'internal' : 'unexpected_status';
  }
}
