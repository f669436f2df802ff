// Semaphores in the lock FSM (docs/lock-fsm.md "Semaphores"): a named counter of
// `limit` permits, held by sessions, with a FIFO queue of requests. The first acquire
// of an idle semaphore sets its limit; a resize changes it and never takes permits away.
// The queue is strict FIFO: a request at the head that does not fit blocks every request
// behind it, so a large request never starves. Every grant takes a fencing token from
// the one global sequence (FsmCore.nextToken). A SemState exists only while it has
// holders or waiters. Queues are plain arrays: removing from the middle is
// O(waiters) ≤ max_waiters_per_lock.

import type { Command } from './commands.js';
import type { ApplyResult, FsmEvent } from './results.js';
import { assert, SemHolder, SemState, SemWaiter, type FsmCore, type Session } from './state.js';
import { compareStrings } from './names.js';
import { cycleOfNewWait } from './deadlock.js';

type SemAcquire = Extract<Command, { kind: 'semAcquire' }>;

/** Acquire. `s` is the session, or null when `open` creates it with this entry (nothing
 *  is created when the acquire fails); `full`: would one more entry exceed max_locks? */
export function semAcquire(c: FsmCore, index: number, cmd: SemAcquire, s: Session | null, owner: string, open: () => Session, full: () => boolean, ev: FsmEvent[], key: string | undefined): ApplyResult {
  const sem = c.sems.get(cmd.name);
  if (sem !== undefined && s !== null) {
    const h = sem.holders.get(s.id);
    // a session's second acquire is not a new grant: same permits, same token
    if (h !== undefined) return acquired(sem, h);
  }
  if (sem !== undefined && sem.limit !== cmd.limit) return { ok: false, code: 'limit_mismatch', limit: sem.limit };
  if (sem !== undefined && s !== null) {
    const i = sem.queue.findIndex((w) => w.session === s);
    if (i >= 0) return { ok: true, kind: 'sem_queued', name: sem.name, sessionId: s.id, position: i + 1 };
  }
  // more permits than the limit can never be granted: refuse rather than queue for ever
  if (cmd.permits > cmd.limit) return { ok: false, code: 'semaphore_full', inUse: sem?.inUse ?? 0, limit: cmd.limit };
  if (sem === undefined || (sem.queue.length === 0 && sem.inUse + cmd.permits <= sem.limit)) {
    if (sem === undefined && full()) return { ok: false, code: 'too_many_requests', limit: 'locks' };
    const st = sem ?? newSem(c, cmd.name, cmd.limit);
    const h = grant(c, st, s ?? open(), owner, cmd.permits, index, ev, cmd.maxHoldMs ?? 0);
    return acquired(st, h);
  }
  if (cmd.waitMs === 0) return { ok: false, code: 'semaphore_full', inUse: sem.inUse, limit: sem.limit };
  if (sem.queue.length >= c.limits.maxWaitersPerLock) return { ok: false, code: 'too_many_requests', limit: 'waiters' };
  if (full()) return { ok: false, code: 'too_many_requests', limit: 'locks' };
  // docs/lock-fsm.md "Deadlock detection": a wait that would close a cycle is refused
  const cycle = s === null ? null : cycleOfNewWait(c, s, { target: 'semaphore', name: sem.name });
  if (cycle !== null) return { ok: false, code: 'deadlock', cycle };
  const w = enqueue(c, sem, s ?? open(), owner, cmd.permits, cmd.waitMs, index, key, cmd.maxHoldMs ?? 0);
  ev.push({ type: 'semWaiting', name: sem.name, sessionId: w.session.id, permits: cmd.permits });
  return { ok: true, kind: 'sem_queued', name: sem.name, sessionId: w.session.id, position: sem.queue.length };
}

export function semRelease(c: FsmCore, index: number, name: string, s: Session, ev: FsmEvent[]): ApplyResult {
  const h = c.sems.get(name)?.holders.get(s.id);
  if (h === undefined) return { ok: false, code: 'not_holder' };
  ev.push({ type: 'semReleased', name, sessionId: s.id, fencingToken: h.token, permits: h.permits, reason: 'released' });
  releaseHolder(c, h, index, ev);
  return { ok: true, kind: 'sem_released', name };
}

/** Resize. An idle semaphore keeps no state, so there is nothing to resize: the answer
 *  is the same, and the next acquire sets the limit it names. */
export function semSetLimit(c: FsmCore, index: number, name: string, limit: number, ev: FsmEvent[]): ApplyResult {
  const sem = c.sems.get(name);
  if (sem !== undefined) {
    if (sem.limit !== limit) ev.push({ type: 'semLimit', name, limit });
    sem.limit = limit;
    pump(c, sem, index, ev); // a larger limit may admit the head
  }
  return { ok: true, kind: 'sem_limit', name, limit };
}

/** The lessor's wait timeout: ends the wait it names (since), a no-op otherwise; if the
 *  grant won the race, tells the proposer so. */
export function semCancelWait(c: FsmCore, index: number, name: string, s: Session, since: number | undefined, ev: FsmEvent[]): ApplyResult {
  const w = s.semWaits?.get(name);
  if (w !== undefined && (since === undefined || w.since === since)) {
    endWait(c, w, 'cancelled');
    ev.push({ type: 'semWaitEnded', name, sessionId: s.id, reason: 'cancelled' });
    pump(c, w.sem, index, ev); // the head may have been the request that blocked the rest
    return { ok: true, kind: 'wait_cancelled', name, sessionId: s.id };
  }
  const h = c.sems.get(name)?.holders.get(s.id);
  if (h !== undefined) return acquired(h.sem, h);
  return { ok: true, kind: 'noop' };
}

/** A session's end: its waits go first (so none of its own permits come back to it), then
 *  its permits, each semaphore in name order. Returns the semaphores it held, sorted. */
export function semEndSession(c: FsmCore, index: number, s: Session, reason: 'closed' | 'expired', ev: FsmEvent[]): string[] {
  if (s.semWaits !== null) {
    const waits = [...s.semWaits.values()].sort((a, b) => compareStrings(a.sem.name, b.sem.name));
    for (const w of waits) {
      endWait(c, w, 'session_ended');
      ev.push({ type: 'semWaitEnded', name: w.sem.name, sessionId: s.id, reason: 'session_ended' });
      pump(c, w.sem, index, ev);
    }
  }
  if (s.sems === null) return [];
  const held = [...s.sems.values()].sort((a, b) => compareStrings(a.sem.name, b.sem.name));
  for (const h of held) {
    ev.push({ type: 'semReleased', name: h.sem.name, sessionId: s.id, fencingToken: h.token, permits: h.permits, reason });
    releaseHolder(c, h, index, ev);
  }
  return held.map((h) => h.sem.name);
}

function acquired(sem: SemState, h: SemHolder): ApplyResult {
  return { ok: true, kind: 'sem_acquired', name: sem.name, sessionId: h.session.id, permits: h.permits, limit: sem.limit, fencingToken: h.token, ttlMs: h.session.ttlMs };
}

function newSem(c: FsmCore, name: string, limit: number): SemState {
  const sem = new SemState(name, limit);
  c.sems.set(name, sem);
  return sem;
}

function grant(c: FsmCore, sem: SemState, s: Session, owner: string, permits: number, index: number, ev: FsmEvent[], maxHoldMs: number): SemHolder {
  assert(c.sessions.get(s.id) === s, `semaphore grant of ${sem.name} to dead session ${s.id}`);
  assert(sem.inUse + permits <= sem.limit, `semaphore ${sem.name} over its limit`);
  const h = attachSemHolder(c, sem, s, owner, permits, c.nextToken(index));
  c.setMaxHold(h, maxHoldMs);
  const e: FsmEvent = { type: 'semGranted', name: sem.name, sessionId: s.id, fencingToken: h.token, permits, limit: sem.limit };
  if (maxHoldMs > 0) e.maxHoldMs = maxHoldMs;
  ev.push(e);
  return h;
}

/** links a holder in (also used by snapshot restore, which brings its own token) */
export function attachSemHolder(c: FsmCore, sem: SemState, s: Session, owner: string, permits: number, token: number): SemHolder {
  const h = new SemHolder(sem, s, owner, permits, token);
  sem.holders.set(s.id, h);
  sem.inUse += permits;
  c.semInUse += permits;
  (s.sems ??= new Map()).set(sem.name, h);
  return h;
}

export function enqueue(c: FsmCore, sem: SemState, s: Session, owner: string, permits: number, waitMs: number, since: number, key: string | undefined, maxHoldMs = 0): SemWaiter {
  const w = new SemWaiter(sem, s, owner, permits, waitMs, since, key, maxHoldMs);
  w.queuedAtMs = c.idem.nowMs;
  sem.queue.push(w);
  c.semWaiterTotal++;
  (s.semWaits ??= new Map()).set(sem.name, w);
  return w;
}

/** A wait ends without a grant: it leaves the queue, and its key's stored 'sem_queued'
 *  becomes what the waiting request was told (IdempotencyTable.endWait): semaphore_full as
 *  the semaphore stands, or session_not_found. The caller serves the queue. */
function endWait(c: FsmCore, w: SemWaiter, reason: 'cancelled' | 'session_ended'): void {
  unlinkWaiter(c, w);
  c.idem.endWait('sem_queued', w.session.id, w.sem.name, () => (reason === 'session_ended' ? { ok: false, code: 'session_not_found' } : { ok: false, code: 'semaphore_full', inUse: w.sem.inUse, limit: w.sem.limit }));
}

function unlinkWaiter(c: FsmCore, w: SemWaiter): void {
  const q = w.sem.queue;
  const i = q.indexOf(w);
  assert(i >= 0, `semaphore waiter ${w.session.id} not in the queue of ${w.sem.name}`);
  q.splice(i, 1);
  c.semWaiterTotal--;
  const waits = w.session.semWaits as Map<string, SemWaiter>;
  waits.delete(w.sem.name);
  if (waits.size === 0) w.session.semWaits = null;
}

/** gives a holder's permits back and grants what now fits (release, session end, revoke,
 *  max-hold expiry: semaphores have no lock-delay) */
export function releaseHolder(c: FsmCore, h: SemHolder, index: number, ev: FsmEvent[]): void {
  const sem = h.sem;
  sem.holders.delete(h.session.id);
  sem.inUse -= h.permits;
  c.semInUse -= h.permits;
  const mine = h.session.sems as Map<string, SemHolder>;
  mine.delete(sem.name);
  if (mine.size === 0) h.session.sems = null;
  pump(c, sem, index, ev);
}

/** Grants from the head while the head fits (strict FIFO), then drops an idle entry. */
function pump(c: FsmCore, sem: SemState, index: number, ev: FsmEvent[]): void {
  for (let w = sem.queue[0]; w !== undefined && sem.inUse + w.permits <= sem.limit; w = sem.queue[0]) {
    unlinkWaiter(c, w);
    const h = grant(c, sem, w.session, w.owner, w.permits, index, ev, w.maxHoldMs);
    c.idem.settle('sem_queued', w.session.id, sem.name, () => acquired(sem, h) as Extract<ApplyResult, { kind: 'sem_acquired' }>);
  }
  if (sem.holders.size === 0 && sem.queue.length === 0) c.sems.delete(sem.name);
}
