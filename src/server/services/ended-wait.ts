// The answer of a request that queued and whose wait is over before that answer is made:
// the entries applied with it (one Ready's committed batch) granted it and let it go
// again, or ended the wait — or this is a late copy of the request (a retry; a relay that
// sat behind a paused node) whose first copy's wait ended long ago.
//
// The state machine settles the request's Idempotency-Key when its wait ends without a
// grant (docs/lock-fsm.md "Idempotency"): the key then answers what the waiting request
// was told (lock_held, semaphore_full, session_not_found). That is this request's answer
// too. Anything else — no key, a key that was granted since, a stored answer of a version
// that did not settle keys — cannot be told from the state: the outcome is unknown (504).
//
// It is never asked again on the client's behalf. A new wait for a request that was
// already answered "no" once grants a lock to a client that was told it did not get it
// (jepsen-lite seed 179705514: a copy relayed 3.7 s late by a node that had been paused
// was asked again and granted the lock), or to a session that released it (seed 971402082).
import type { ApplyResult, LockFsm } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { RequestContext } from '../../api/service.js';
import { resultError } from '../../api/result-errors.js';
import { refused, type Result } from '../../api/service-result.js';

/** `what`: what to read to learn the outcome ("lock", "semaphore", "locks", "election");
 *  `settled`: the key's settled answer, when the caller has read it already */
export function endedWaitAnswer<T>(fsm: LockFsm, ctx: RequestContext, what: string, settled = settledWait(fsm, ctx)): Result<T> {
  if (settled !== undefined && !settled.ok) return refused(resultError(settled));
  return refused(new Failure('timeout', `the wait ended before this request could be answered (it may have been granted and released since): the outcome is unknown; read the ${what}, or retry with the same Idempotency-Key`));
}

/**
 * What the Idempotency-Key of a request the state machine answered 'queued' has settled
 * to since: the grant its wait came to, or the refusal it ended with. `undefined` while
 * the key still stores the 'queued' answer, or without a key.
 *
 * A waiting request's answer is its key's, before anything its session holds now: with
 * two acquires of one name in flight in one session, the grant the session holds may be
 * the other request's, and this one's wait may have ended "no" (its retry would answer
 * that refusal).
 */
export function settledWait(fsm: LockFsm, ctx: RequestContext): ApplyResult | undefined {
  const key = ctx.idempotencyKey;
  const stored = key === undefined ? undefined : fsm.answerOf(key);
  if (stored === undefined) return undefined;
  if (stored.ok) return stored.kind === 'queued' || stored.kind === 'sem_queued' || stored.kind === 'queued_all' ? undefined : stored;
  return stored.code === 'idempotency_key_reused' ? undefined : stored;
}
