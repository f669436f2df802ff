// The state machine's refusals as the REST contract's failures (docs/api.md "Errors"): one
// mapping for every service on the node. Failures carry no HTTP status (failure.ts).
import type { ApplyResult, BlockedName, CycleEntry, HolderInfo, KeyReuse, LimitName, LockInfo } from '../lock-fsm/index.js';
import { Failure } from './failure.js';
import { holderView } from './lock-views.js';

export function sessionNotFound(id: string): Failure {
  return new Failure('session_not_found', `session ${id.length > 64 ? id.slice(0, 64) + '…' : id} is unknown or expired`);
}

export function lockHeldError(name: string, holder: HolderInfo | undefined): Failure {
  if (!holder) return new Failure('lock_held', `lock ${name} is in lock-delay after its holder's session expired`);
  return new Failure('lock_held', `lock ${name} is held by session ${holder.sessionId}`, { details: { holder: holderView(holder) } });
}

/** The refusal for an acquire whose grant ended before its answer (a release, revoke or
 *  expiry later in the same committed batch): nothing of the request is left, so the
 *  answer is what is true now, `now` (its code and details), saying why (a free lock would
 *  otherwise read as "in lock-delay", an idle semaphore as "full"). */
export function grantEndedBeforeAnswer(what: string, now: Failure): Failure {
  return new Failure(now.code, `the grant this request got for ${what} ended before the answer (released, revoked or expired right after it); now: ${now.message}`, now.details === undefined ? {} : { details: now.details });
}

/** 409 lock_held saying what the lock's state is now (lockHeldError knows only a holder) */
export function lockStateNow(lock: LockInfo): Failure {
  if (lock.holder || lock.inDelay) return lockHeldError(lock.name, lock.holder);
  const what = lock.held ? 'held shared' : lock.waiters > 0 ? `free, with ${lock.waiters} request(s) waiting` : 'free';
  return new Failure('lock_held', `lock ${lock.name} is ${what}`);
}

/** 409 lock_held of a lock set (docs/contract.md §5): `blocked` names each lock that stood
 *  in its way, with its holder when it has an exclusive one */
export function setHeldError(blocked: readonly BlockedName[]): Failure {
  const rows = blocked.map((b) => (b.holder ? { name: b.name, holder: holderView(b.holder) } : { name: b.name }));
  const first = blocked[0];
  const what = first === undefined ? 'the locks are held' : `${first.name} is ${first.holder ? `held by session ${first.holder.sessionId}` : 'not available'}${blocked.length > 1 ? ` (and ${blocked.length - 1} more)` : ''}`;
  return new Failure('lock_held', `not every lock of the set could be granted: ${what}`, { details: { blocked: rows } });
}

/** 409 deadlock (docs/contract.md §5 "Deadlock detection"): the cycle, the refused
 *  request's session first, each session with the name it waits on */
export function deadlockError(cycle: readonly CycleEntry[]): Failure {
  const rows = cycle.map((e) => (e.kind === 'semaphore' ? { session_id: e.sessionId, name: e.name, kind: 'semaphore' as const } : { session_id: e.sessionId, name: e.name }));
  const path = cycle.map((e, i) => `${e.sessionId} waits on ${e.kind === 'semaphore' ? 'semaphore ' : ''}${e.name} for ${(cycle[(i + 1) % cycle.length] as CycleEntry).sessionId}`).join('; ');
  return new Failure('deadlock', `this wait would close a cycle of waiting sessions (${path}): refused, nothing changed`, { details: { cycle: rows } });
}

export function permissionDenied(): Failure {
  return new Failure('permission_denied', 'the session was opened by another token; acting on it needs the admin right');
}

export function resultError(r: ApplyResult): Failure {
  if (r.ok) return new Failure('internal', `unexpected result ${r.kind}`);
  switch (r.code) {
    case 'lock_held':
      if (r.blocked !== undefined) return setHeldError(r.blocked);
      return new Failure('lock_held', r.holder ? `the lock is held by session ${r.holder.sessionId}` : 'the lock is in lock-delay', r.holder ? { details: { holder: holderView(r.holder) } } : {});
    case 'deadlock':
      return deadlockError(r.cycle);
    case 'not_holder':
      return new Failure('not_holder', 'the session does not hold the lock, or the fencing token is stale');
    case 'session_not_found':
      return new Failure('session_not_found', 'unknown or expired session');
    case 'session_exists':
      return new Failure('unavailable', 'session id collision; retry');
    case 'permission_denied':
      return permissionDenied();
    case 'too_many_requests':
      return new Failure('too_many_requests', LIMIT_MESSAGES[r.limit], { retryAfterS: 1 });
    case 'limit_mismatch':
      return new Failure('limit_mismatch', `the semaphore's limit is ${r.limit}`, { details: { limit: r.limit } });
    case 'semaphore_full':
      return new Failure('semaphore_full', `the semaphore has ${r.inUse} of ${r.limit} permits in use`, { details: { in_use: r.inUse, limit: r.limit } });
    case 'idempotency_key_reused':
      return keyReused(r.differs);
  }
}

/** 422: the key's first request was another one (docs/api.md "Idempotency"). The message
 *  names the part that differs; to another principal it says nothing of the first request. */
export function keyReused(differs: KeyReuse): Failure {
  return new Failure('idempotency_key_reused', `the Idempotency-Key was first used for another request (${REUSE_MESSAGES[differs]}); nothing was applied: use a new key for a new request`);
}

const REUSE_MESSAGES: Record<KeyReuse, string> = {
  principal: 'sent with another token',
  operation: 'another operation',
  name: 'another name',
  body: 'the same operation on the same name with other parameters',
};

const LIMIT_MESSAGES: Record<LimitName, string> = {
  sessions: 'the cluster-wide session limit (limits.max_sessions) is reached',
  waiters: 'the lock has too many waiters (limits.max_waiters_per_lock)',
  sessions_per_token: 'this token has too many open sessions (limits.max_sessions_per_token)',
  locks: 'the cluster-wide lock limit (limits.max_locks) is reached',
};
