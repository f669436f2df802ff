// Full O(n) consistency check of a LockFsm's state, for tests and the cluster simulator
// (never on the hot path). Every cross-link the FSM keeps for speed is re-derived here
// from scratch; any disagreement throws with a message naming the lock or session.

import type { LockFsm } from './fsm.js';
import { isElectionValue } from './names.js';
import { assert, type LockState, type Session, type Waiter } from './state.js';
import { isReady } from './lock-sets.js';
import { waitForCycle } from './deadlock.js';

export function assertFsmInvariants(fsm: LockFsm): void {
  const c = fsm.core;
  let heldCount = 0, waiterTotal = 0, delayedCount = 0, leaders = 0;
  const tokens = new Set<number>();
  for (const [name, l] of c.locks) {
    assert(l.name === name, `lock entry ${name} is named ${l.name}`);
    assert(l.holder !== null || l.shares !== null || l.inDelay || l.waiterCount > 0, `empty lock entry ${name} kept`);
    // a free lock (not in delay) with waiters exists only for a lock set's place at its head,
    // a set that cannot be granted yet (docs/lock-fsm.md "Lock sets")
    const h = l.head;
    assert(l.holder !== null || l.shares !== null || l.inDelay || l.waiterCount === 0 || h?.set != null, `free lock ${name} (not in delay) has waiters: nobody served`);
    assert(!(l.holder !== null && l.shares !== null), `lock ${name} held exclusively beside shared holders`);
    assert(h === null || l.holder !== null || l.inDelay || (h.set !== null ? !isReady(h.set) : !h.shared && l.shares !== null), `lock ${name}: the head of its queue could be granted`);
    if (l.shares !== null) {
      assert(l.shares.size > 0, `lock ${name} keeps an empty share map`);
      heldCount++;
      assert(c.held.has(name), `shared lock ${name} missing from the sorted index`);
      assert(l.token === 0, `shared lock ${name} keeps an exclusive token ${l.token}`);
      for (const [sid, sh] of l.shares) {
        assert(sh.session.id === sid && sh.lock === l && c.sessions.get(sid) === sh.session, `share of ${name} by ${sid} badly linked`);
        assert(sh.session.shares?.get(name) === sh, `session ${sid} does not know its share of ${name}`);
        assert(sh.token >= 1 && sh.token <= c.lastToken && !tokens.has(sh.token), `share token ${sh.token} of ${name} out of range or held twice`);
        tokens.add(sh.token);
      }
    }
    if (l.holder !== null) {
      heldCount++;
      assert(!l.inDelay, `lock ${name} held during lock-delay`);
      assert(c.sessions.get(l.holder.id) === l.holder, `lock ${name} held by dead session ${l.holder.id}`);
      assert(l.token >= 1 && l.token <= c.lastToken, `lock ${name} token ${l.token} outside [1, ${c.lastToken}]`);
      assert(!tokens.has(l.token), `token ${l.token} held twice`);
      tokens.add(l.token);
      assert(c.held.has(name), `held lock ${name} missing from the sorted index`);
    } else if (l.shares === null) {
      assert(!c.held.has(name), `free lock ${name} in the sorted index`);
      assert(l.token === 0, `free lock ${name} keeps token ${l.token}`);
    }
    // an election's leader is its exclusive holder (docs/lock-fsm.md "Elections")
    if (l.value !== null) {
      leaders++;
      assert(l.holder !== null && isElectionValue(l.value), `lock ${name} keeps an election value without an exclusive holder, or a malformed one`);
    }
    if (l.inDelay) {
      assert(l.holder === null, `lock ${name} in delay with an exclusive holder`);
      delayedCount++;
      assert(l.delayMs > 0 && c.delayed.has(l), `delayed lock ${name} not registered`);
    }
    waiterTotal += checkQueue(fsm, l);
  }
  assert(c.electionLeaders === leaders, `electionLeaders ${c.electionLeaders} != ${leaders} locks held by a campaign`);
  assert(c.held.size === heldCount, `sorted index has ${c.held.size} names, ${heldCount} locks held`);
  assert(c.delayed.size === delayedCount, `delayed set has ${c.delayed.size}, ${delayedCount} locks in delay`);
  assert(c.waiterTotal === waiterTotal, `waiterTotal ${c.waiterTotal} != ${waiterTotal}`);
  let sessionWaits = 0;
  const perPrincipal = new Map<string, number>();
  for (const [id, s] of c.sessions) {
    sessionWaits += checkSession(fsm, id, s);
    if (s.principal !== '') perPrincipal.set(s.principal, (perPrincipal.get(s.principal) ?? 0) + 1);
  }
  assert(perPrincipal.size === c.perPrincipal.size && [...perPrincipal].every(([p, n]) => c.perPrincipal.get(p) === n), 'per-principal session counts disagree with the sessions');
  assert(sessionWaits === waiterTotal, `sessions know ${sessionWaits} waits, queues hold ${waiterTotal}`);
  c.held.assertValid();
  checkSemaphores(fsm, tokens);
  checkLockSets(fsm);
  // no deadlock persists: the apply that would have closed a cycle refused that wait
  const cycle = waitForCycle(fsm);
  assert(cycle === null, `the wait-for graph has a cycle: ${JSON.stringify(cycle)}`);
}

/** docs/lock-fsm.md "Lock sets": every waiting set is whole (each of its names is a place
 *  in that lock's queue, queued at the set's index, or held by its session), registered
 *  once, and no place belongs to a set that does not know it */
function checkLockSets(fsm: LockFsm): void {
  const c = fsm.core;
  let places = 0;
  for (const set of c.lockSets) {
    const s = set.session;
    assert(c.sessions.get(s.id) === s && s.lockSets?.includes(set) === true, `lock set of ${s.id} at ${set.since}: session dead or unaware of it`);
    assert(set.members.length > 0 && set.members.length + set.held.length === set.names.length, `lock set of ${s.id} at ${set.since}: ${set.members.length} places and ${set.held.length} held names for ${set.names.length} names`);
    assert(new Set(set.names).size === set.names.length, `lock set of ${s.id} at ${set.since} names a lock twice`);
    for (const w of set.members) {
      places++;
      assert(w.set === set && w.session === s && w.since === set.since && w.shared === set.shared && s.waits?.get(w.lock.name) === w && set.names.includes(w.lock.name), `lock set of ${s.id} at ${set.since}: place on ${w.lock.name} badly linked`);
      assert(w.key === undefined && w.value === undefined, `lock set of ${s.id}: place on ${w.lock.name} carries a key or an election value`);
    }
    for (const name of set.held) {
      const l = c.locks.get(name);
      // never partly held: a name counted as held is held, or the set would have ended
      assert(l?.holder === s || (set.shared && l?.shares?.has(s.id) === true), `lock set of ${s.id} at ${set.since} counts on ${name}, which it does not hold`);
    }
  }
  for (const s of c.sessions.values()) {
    if (s.lockSets === null) continue;
    assert(s.lockSets.length > 0 && s.lockSets.every((x, i, a) => c.lockSets.has(x) && (i === 0 || (a[i - 1] as typeof x).since < x.since)), `session ${s.id}: stale or unordered lock sets`);
  }
  let marked = 0;
  for (const l of c.locks.values()) {
    // queues grow at the tail in log order: so are the places of every request (non-zero
    // since: waits restored from old snapshots have 0), which orders sets alike everywhere
    let last = 0;
    for (let w = l.head; w !== null; w = w.next) {
      if (w.set !== null) {
        marked++;
        assert(c.lockSets.has(w.set), `queue of ${l.name}: a place of an unregistered lock set`);
      }
      if (w.since === 0) continue;
      assert(w.since > last, `queue of ${l.name}: wait begun at ${w.since} behind one begun at ${last}`);
      last = w.since;
    }
  }
  assert(marked === places, `${marked} places in queues belong to sets, the sets have ${places}`);
}

function checkSemaphores(fsm: LockFsm, tokens: Set<number>): void {
  const c = fsm.core;
  let inUse = 0, waiters = 0, sessionHolds = 0, sessionWaits = 0;
  for (const [name, sem] of c.sems) {
    assert(sem.name === name && (sem.holders.size > 0 || sem.queue.length > 0), `semaphore entry ${name} misnamed or idle`);
    let used = 0;
    for (const [sid, h] of sem.holders) {
      assert(h.session.id === sid && h.sem === sem && c.sessions.get(sid) === h.session && h.session.sems?.get(name) === h, `semaphore ${name}: holder ${sid} badly linked`);
      assert(h.permits >= 1 && h.token >= 1 && h.token <= c.lastToken && !tokens.has(h.token), `semaphore ${name}: holder ${sid} permits/token out of range or token held twice`);
      tokens.add(h.token);
      used += h.permits;
    }
    assert(sem.inUse === used, `semaphore ${name}: inUse ${sem.inUse} != ${used}`);
    const head = sem.queue[0];
    assert(head === undefined || used + head.permits > sem.limit, `semaphore ${name}: the head of its queue fits`);
    const seen = new Set<string>();
    for (const w of sem.queue) {
      assert(w.sem === sem && c.sessions.get(w.session.id) === w.session && w.session.semWaits?.get(name) === w, `semaphore ${name}: waiter ${w.session.id} badly linked`);
      assert(!sem.holders.has(w.session.id) && !seen.has(w.session.id), `semaphore ${name}: ${w.session.id} waits twice or holds and waits`);
      seen.add(w.session.id);
      assert(w.waitMs > 0 && w.permits >= 1, `semaphore ${name}: waiter ${w.session.id} waitMs/permits out of range`);
      assert(w.queuedAtMs >= 0 && w.queuedAtMs <= c.idem.nowMs, `semaphore ${name}: waiter ${w.session.id} queued at log time ${w.queuedAtMs}, after the applied log time ${c.idem.nowMs}`);
    }
    inUse += used;
    waiters += sem.queue.length;
  }
  for (const s of c.sessions.values()) {
    if (s.sems !== null) { assert(s.sems.size > 0, `session ${s.id} keeps an empty semaphore map`); sessionHolds += s.sems.size; }
    if (s.semWaits !== null) { assert(s.semWaits.size > 0, `session ${s.id} keeps an empty semaphore wait map`); sessionWaits += s.semWaits.size; }
    if (s.shares !== null) assert(s.shares.size > 0 && [...s.shares].every(([n, sh]) => c.locks.get(n)?.shares?.get(s.id) === sh), `session ${s.id}: stale shares`);
  }
  let holds = 0;
  for (const sem of c.sems.values()) holds += sem.holders.size;
  assert(sessionHolds === holds && sessionWaits === waiters, `sessions know ${sessionHolds} semaphore holds and ${sessionWaits} waits, semaphores have ${holds} and ${waiters}`);
  assert(c.semInUse === inUse && c.semWaiterTotal === waiters, `semInUse ${c.semInUse} / semWaiterTotal ${c.semWaiterTotal} != ${inUse} / ${waiters}`);
}

function checkQueue(fsm: LockFsm, l: LockState): number {
  const c = fsm.core;
  const seen = new Set<Session>();
  let n = 0, prev: Waiter | null = null;
  for (let w = l.head; w !== null; prev = w, w = w.next) {
    n++;
    assert(w.prev === prev && w.lock === l, `queue of ${l.name} badly linked`);
    assert(c.sessions.get(w.session.id) === w.session, `waiter ${w.session.id} on ${l.name} has no live session`);
    assert(w.session !== l.holder, `holder ${w.session.id} also waits for ${l.name}`);
    assert(!seen.has(w.session), `session ${w.session.id} waits twice for ${l.name}`);
    seen.add(w.session);
    assert(w.session.waits?.get(l.name) === w, `session ${w.session.id} does not know its wait on ${l.name}`);
    assert(w.waitMs > 0, `waiter on ${l.name} with waitMs ${w.waitMs}`);
    assert(w.queuedAtMs >= 0 && w.queuedAtMs <= c.idem.nowMs, `waiter on ${l.name} queued at log time ${w.queuedAtMs}, after the applied log time ${c.idem.nowMs}`);
    assert(w.value === undefined || (!w.shared && isElectionValue(w.value)), `candidate ${w.session.id} on ${l.name}: shared or malformed value`);
  }
  assert(l.tail === prev, `queue of ${l.name}: tail is not the last waiter`);
  assert(l.waiterCount === n, `queue of ${l.name}: count ${l.waiterCount} != ${n}`);
  return n;
}

function checkSession(fsm: LockFsm, id: string, s: Session): number {
  const c = fsm.core;
  assert(s.id === id, `session entry ${id} is named ${s.id}`);
  let n = 0, prev: LockState | null = null;
  for (let l = s.heldHead; l !== null; prev = l, l = l.heldNext) {
    n++;
    assert(l.heldPrev === prev, `held list of ${id} badly linked`);
    assert(l.holder === s && c.locks.get(l.name) === l, `session ${id} lists ${l.name}, held by ${l.holder?.id ?? 'nobody'}`);
  }
  assert(s.heldCount === n, `session ${id}: heldCount ${s.heldCount} != ${n}`);
  if (s.waits !== null) {
    assert(s.waits.size > 0, `session ${id} keeps an empty waits map`);
    for (const [name, w] of s.waits) assert(w.session === s && w.lock.name === name && c.locks.get(name) === w.lock, `session ${id}: stale wait on ${name}`);
  }
  return s.waits?.size ?? 0;
}
