// Lock sets (docs/lock-fsm.md "Lock sets"): several locks granted together in one apply, or
// none. A set that cannot be granted at once waits as ONE request with one place, at its
// log index, in the FIFO queue of every name it needs: each place is an ordinary Waiter of
// that lock's queue (so lock views, waiter counts, the lessor and the watch see a waiting
// request there) linked to the LockSetWait they share. Queues only ever grow at the tail,
// in log order, so two requests that share names are ordered the same way in every queue
// they share, and two waiting sets can never wait for each other through their places.
//
// A set is granted when every one of its places is at the head of its queue and its lock
// can be granted in the set's mode; FsmCore.pump checks that whenever the head of a queue
// can move, exactly as for a single request. The grants take consecutive tokens in name
// order (the rule of every multi-grant step: docs/lock-fsm.md "Semantics and guarantees").
// A name the session already holds when the set queues is not queued: it is answered with
// its existing token at the grant. If the session loses such a name while the set waits
// (release, revoke, max hold), the set can no longer be granted whole: its wait ends
// (waitEnded, reason cancelled), never a set partly held.

import { assertFsm as assert } from '../assert.js';
import type { Command } from './commands.js';
import type { ApplyResult, BlockedName, FsmEvent, SetGrant } from './results.js';
import { LockSetWait, type FsmCore, type LockSetSteps, type LockState, type Session, type Waiter } from './state.js';
import { compareStrings } from './names.js';
import { cycleOfNewWait } from './deadlock.js';

type AcquireAll = Extract<Command, { kind: 'acquireAll' }>;

/** who asks and what a new wait may cost: fsm.ts's acquirer and its max_locks room */
export interface SetRequester {
  /** the existing session, or null when `open` creates it with this entry */
  s: Session | null;
  owner: string;
  open: () => Session;
  /** lock entries plus queued waits that may still be added under limits.max_locks */
  room: () => number;
}

/** acquireAll: grant every name now, queue the set, or refuse it, changing nothing */
export function acquireAll(c: FsmCore, index: number, cmd: AcquireAll, who: SetRequester, ev: FsmEvent[], key: string | undefined): ApplyResult {
  const shared = cmd.mode === 'shared';
  const s0 = who.s;
  const need: string[] = [];
  const held: string[] = [];
  const upgrade: BlockedName[] = [];
  const blocked: BlockedName[] = [];
  for (const name of cmd.names) {
    const l = c.locks.get(name);
    if (s0 !== null && l !== undefined) {
      // as a single re-acquire: an exclusive grant answers either mode; a share answers a
      // shared set and is never upgraded (two sharers upgrading would wait for ever)
      if (l.holder === s0) { held.push(name); continue; }
      if (l.shares?.has(s0.id) === true) {
        if (shared) held.push(name);
        else upgrade.push({ name });
        continue;
      }
    }
    need.push(name);
    if (l !== undefined && !c.grantable(l, shared)) blocked.push(blockedRow(l));
  }
  if (upgrade.length > 0) return { ok: false, code: 'lock_held', blocked: upgrade };
  if (blocked.length === 0) {
    const fresh = need.filter((n) => !c.locks.has(n)).length;
    if (fresh > 0 && who.room() < fresh) return { ok: false, code: 'too_many_requests', limit: 'locks' };
    const s = s0 ?? who.open();
    const tokens = new Map<string, number>();
    for (const name of [...need].sort(compareStrings)) {
      const l = c.lockFor(name);
      tokens.set(name, shared ? c.grantShare(l, s, who.owner, index, ev, cmd.maxHoldMs ?? 0) : c.grant(l, s, who.owner, index, ev, cmd.maxHoldMs ?? 0));
    }
    return acquiredAll(c, s, cmd.names, tokens, shared);
  }
  if (cmd.waitMs === 0) return { ok: false, code: 'lock_held', blocked };
  if (s0 !== null && s0.waits !== null) {
    // The session already waits for some of these names: the same set again keeps its
    // place (a retry); anything else is refused, its earlier wait left as it is.
    const mine: Waiter[] = [];
    for (const name of need) {
      const w = s0.waits.get(name);
      if (w !== undefined) mine.push(w);
    }
    if (mine.length > 0) {
      const set = (mine[0] as Waiter).set;
      if (set !== null && set.shared === shared && mine.every((w) => w.set === set) && sameNames(set.names, cmd.names)) return queuedAll(set);
      return { ok: false, code: 'lock_held', blocked: mine.map((w) => blockedRow(w.lock)) };
    }
  }
  for (const name of need) {
    const l = c.locks.get(name);
    if (l !== undefined && l.waiterCount >= c.limits.maxWaitersPerLock) return { ok: false, code: 'too_many_requests', limit: 'waiters' };
  }
  if (who.room() < need.length + need.filter((n) => !c.locks.has(n)).length) return { ok: false, code: 'too_many_requests', limit: 'locks' };
  if (s0 !== null) {
    const cycle = cycleOfNewWait(c, s0, { target: 'lock', names: need, shared });
    if (cycle !== null) return { ok: false, code: 'deadlock', cycle };
  }
  const s = s0 ?? who.open();
  const set = new LockSetWait(s, [...cmd.names], held.sort(compareStrings), shared, index, key);
  for (const name of need) {
    const w = c.enqueue(c.lockFor(name), s, who.owner, cmd.waitMs, index, undefined, shared, cmd.maxHoldMs ?? 0);
    w.set = set;
    set.members.push(w);
    ev.push(shared ? { type: 'waiting', name, sessionId: s.id, mode: 'shared' } : { type: 'waiting', name, sessionId: s.id });
  }
  register(c, set);
  return queuedAll(set);
}

/** releaseAll: ends the session's waits on these names (a waiting set as a whole) and its
 *  waiting sets that count on holding one of them, then releases each name it holds, in
 *  name order */
export function releaseAll(c: FsmCore, index: number, names: readonly string[], s: Session, ev: FsmEvent[]): ApplyResult {
  const asked = new Set(names);
  // Every wait that ends here ends before any queue is served (endWaits): serving one could
  // grant another of these sets, between two of this request's steps, and that set would
  // be answered with a name this same entry then releases (lock-sets.property,
  // FSM_SEED=1349505663, for a set counting on a released name). The waits on the names,
  // by name; then the sets that count on holding one, in log order.
  const ends: (Waiter | LockSetWait)[] = [];
  for (const w of [...(s.waits?.values() ?? [])].filter((x) => asked.has(x.lock.name)).sort(byLockName)) {
    const end = w.set ?? w;
    if (!ends.includes(end)) ends.push(end);
  }
  for (const set of s.lockSets ?? []) if (!ends.includes(set) && set.held.some((n) => asked.has(n))) ends.push(set);
  endWaits(c, ends, 'cancelled', index, ev);
  const released = new Set<string>();
  for (const name of [...asked].sort(compareStrings)) {
    const l = c.locks.get(name);
    if (l === undefined) continue;
    if (l.holder === s) {
      ev.push(l.value !== null ? { type: 'released', name, sessionId: s.id, fencingToken: l.token, reason: 'released', election: true } : { type: 'released', name, sessionId: s.id, fencingToken: l.token, reason: 'released' });
      c.free(l, 0, index, ev);
      released.add(name);
      continue;
    }
    const sh = l.shares?.get(s.id);
    if (sh === undefined) continue;
    ev.push({ type: 'released', name, sessionId: s.id, fencingToken: sh.token, mode: 'shared', reason: 'released' });
    c.freeShare(l, s, 0, index, ev);
    released.add(name);
  }
  return { ok: true, kind: 'released_all', released: names.filter((n) => released.has(n)) };
}

/**
 * Called by FsmCore.pump when a member of `set` is at the head of its queue: grants the
 * whole set if every member is at the head of its queue and its lock is grantable in the
 * set's mode; returns false (nothing changed) otherwise. The other members' locks are
 * pushed onto `work`, which pump works through (their queues moved too).
 */
export function grantSetIfReady(c: FsmCore, set: LockSetWait, index: number, ev: FsmEvent[], work: LockState[]): boolean {
  if (!isReady(set)) return false;
  unregister(c, set);
  for (const m of set.members) c.unlinkWaiter(m);
  const s = set.session;
  const tokens = new Map<string, number>();
  for (const m of [...set.members].sort(byLockName)) {
    const l = m.lock;
    tokens.set(l.name, set.shared ? c.grantShare(l, s, m.owner, index, ev, m.maxHoldMs) : c.grant(l, s, m.owner, index, ev, m.maxHoldMs));
    work.push(l);
  }
  const r = acquiredAll(c, s, set.names, tokens, set.shared);
  c.idem.settleSet(s.id, set.since, () => r);
  // a single acquire of one of the set's names by its session joined that place's wait
  // (its answer was 'queued'): it answers that name's grant
  for (const g of r.grants) c.idem.settle('queued', s.id, g.name, () => ({ ok: true, kind: 'acquired', name: g.name, sessionId: s.id, fencingToken: g.fencingToken, ttlMs: r.ttlMs, ...(set.shared ? { mode: 'shared' as const } : {}) }));
  ev.push(set.shared ? { type: 'setGranted', sessionId: s.id, since: set.since, grants: r.grants, mode: 'shared' } : { type: 'setGranted', sessionId: s.id, since: set.since, grants: r.grants });
  return true;
}

/** can the set be granted now? (every place at the head, every lock free for its mode) */
export function isReady(set: LockSetWait): boolean {
  for (const m of set.members) {
    const l = m.lock;
    if (m.prev !== null || l.holder !== null || l.inDelay || (!set.shared && l.shares !== null)) return false;
  }
  return true;
}

/** Ends a waiting set: every place leaves its queue (waitEnded per name, in name order),
 *  then each of those queues is served. */
export function cancelSet(c: FsmCore, set: LockSetWait, reason: 'cancelled' | 'session_ended', index: number, ev: FsmEvent[]): void {
  endWaits(c, [set], reason, index, ev);
}

/**
 * Ends several waits of one session — whole sets and single waits, in the order given —
 * before any queue is served: every place leaves its queue (waitEnded per place, a set's in
 * name order), then each of those queues is served, in the same order. Serving a queue can
 * grant another waiting set of the session (a shared set behind a shared one that it lets
 * through); had that come between two of these ends, a set being ended could be granted
 * first, answered with a name the session no longer holds, and ending it afterwards broke
 * the state machine's own invariant inside apply (every replica fails on that entry;
 * test/lock-fsm/lock-sets.test.ts "a withdrawn set is not granted by the withdrawal of
 * another").
 */
function endWaits(c: FsmCore, ends: readonly (Waiter | LockSetWait)[], reason: 'cancelled' | 'session_ended', index: number, ev: FsmEvent[]): void {
  if (c.testEndWaitsOneByOne && ends.length > 1) {
    // the mutation: each ends and serves its queues before the next (skipping one that a
    // queue served meanwhile granted)
    for (const end of ends) if (end instanceof LockSetWait ? c.lockSets.has(end) : end.session.waits?.get(end.lock.name) === end) endWaits(c, [end], reason, index, ev);
    return;
  }
  const served: LockState[] = [];
  for (const end of ends) {
    const places = end instanceof LockSetWait ? [...end.members].sort(byLockName) : [end];
    if (end instanceof LockSetWait) endSet(c, end, reason);
    for (const w of places) {
      c.endWait(w, reason);
      ev.push({ type: 'waitEnded', name: w.lock.name, sessionId: w.session.id, reason });
      served.push(w.lock);
    }
  }
  for (const l of served) c.pump(l, index, ev);
}

/** A session with waiting sets ends (fsm.ts endSession): every one of its waits leaves its
 *  queue (waitEnded session_ended, by name), then each of those queues is served, by name. */
export function endWaitsWithSets(c: FsmCore, s: Session, index: number, ev: FsmEvent[]): void {
  for (const set of [...(s.lockSets ?? [])]) endSet(c, set, 'session_ended');
  const waits = [...(s.waits?.values() ?? [])].sort(byLockName);
  for (const w of waits) {
    c.endWait(w, 'session_ended');
    ev.push({ type: 'waitEnded', name: w.lock.name, sessionId: s.id, reason: 'session_ended' });
  }
  for (const w of waits) c.pump(w.lock, index, ev);
}

/** The session just lost its grant of `name` (FsmCore.free / freeShare): a set of it that
 *  counted on holding that name can no longer be granted whole, so its wait ends. */
export function withdrawSetsHolding(c: FsmCore, s: Session, name: string, index: number, ev: FsmEvent[]): void {
  const sets = s.lockSets;
  if (sets === null) return;
  endWaits(c, sets.filter((set) => set.held.includes(name)), 'cancelled', index, ev);
}

/** the two steps FsmCore takes on lock sets (state.ts LockSetSteps): handed to it by
 *  newCore's callers, so state.ts imports nothing from this file */
export const LOCK_SET_STEPS: LockSetSteps = { grantIfReady: grantSetIfReady, withdrawHolding: withdrawSetsHolding };

/** links a waiting set in (apply and snapshot import); the session's list stays in
 *  `since` order, the order every multi-set step walks it in */
export function register(c: FsmCore, set: LockSetWait): void {
  c.lockSets.add(set);
  const list = (set.session.lockSets ??= []);
  assert(list.length === 0 || (list[list.length - 1] as LockSetWait).since < set.since, `lock sets of ${set.session.id} out of log order`);
  list.push(set);
}

/** A waiting set ends without a grant: it is no longer registered, and its key's stored
 *  'queued_all' becomes what the waiting request was told (IdempotencyTable.endSetWait):
 *  lock_held with its places as they stand before they leave their queues, or
 *  session_not_found. The caller ends the places' waits. */
function endSet(c: FsmCore, set: LockSetWait, reason: 'cancelled' | 'session_ended'): void {
  unregister(c, set);
  c.idem.endSetWait(set.session.id, set.since, () => (reason === 'session_ended' ? { ok: false, code: 'session_not_found' } : { ok: false, code: 'lock_held', blocked: [...set.members].sort(byLockName).map((w) => blockedRow(w.lock)) }));
}

function unregister(c: FsmCore, set: LockSetWait): void {
  assert(c.lockSets.delete(set), `lock set of ${set.session.id} at ${set.since} not registered`);
  const list = set.session.lockSets as LockSetWait[];
  list.splice(list.indexOf(set), 1);
  if (list.length === 0) set.session.lockSets = null;
}

/** a name that stands in a request's way, with its exclusive holder when it has one */
export function blockedRow(l: LockState): BlockedName {
  return l.holder === null ? { name: l.name } : { name: l.name, holder: { sessionId: l.holder.id, owner: l.holderOwner, fencingToken: l.token } };
}

/** the token of the session's current grant of `name` (exclusive or shared) */
function heldToken(c: FsmCore, s: Session, name: string): number {
  const l = c.locks.get(name);
  const token = l?.holder === s ? l.token : l?.shares?.get(s.id)?.token;
  assert(token !== undefined, `lock set of ${s.id}: ${name} is neither granted nor held`);
  return token;
}

function acquiredAll(c: FsmCore, s: Session, names: readonly string[], tokens: Map<string, number>, shared: boolean): Extract<ApplyResult, { kind: 'acquired_all' }> {
  const grants = names.map((name): SetGrant => ({ name, fencingToken: tokens.get(name) ?? heldToken(c, s, name) }));
  return shared ? { ok: true, kind: 'acquired_all', sessionId: s.id, ttlMs: s.ttlMs, grants, mode: 'shared' } : { ok: true, kind: 'acquired_all', sessionId: s.id, ttlMs: s.ttlMs, grants };
}

function queuedAll(set: LockSetWait): ApplyResult {
  return { ok: true, kind: 'queued_all', sessionId: set.session.id, names: [...set.names], since: set.since };
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const x = new Set(a);
  return b.every((n) => x.has(n));
}

const byLockName = (a: Waiter, b: Waiter): number => compareStrings(a.lock.name, b.lock.name);
