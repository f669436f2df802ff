// Full O(n) consistency check of a LockFsm's state, for tests and the cluster simulator
// (never on the hot path). Every cross-link the FSM keeps for speed is re-derived here
// from scratch; any disagreement throws with a message naming the lock or session.

import type { LockFsm } from './fsm.js';
import { assert, type LockState, type Session, type Waiter } from './state.js';

export function assertFsmInvariants(fsm: LockFsm): void {
  const c = fsm.core;
  let heldCount = 0, waiterTotal = 0, delayedCount = 0;
  const tokens = new Set<number>();
  for (const [name, l] of c.locks) {
    assert(l.name === name, `lock entry ${name} is named ${l.name}`);
    assert(l.holder !== null || l.inDelay || l.waiterCount > 0, `empty lock entry ${name} kept`);
    assert(l.holder !== null || l.inDelay, `free lock ${name} (not in delay) has waiters: ≤1 holder but nobody served`);
    if (l.holder !== null) {
      heldCount++;
      assert(!l.inDelay, `lock ${name} held during lock-delay`);
      assert(c.sessions.get(l.holder.id) === l.holder, `lock ${name} held by dead session ${l.holder.id}`);
      assert(l.token >= 1 && l.token <= c.lastToken, `lock ${name} token ${l.token} outside [1, ${c.lastToken}]`);
      assert(!tokens.has(l.token), `token ${l.token} held twice`);
      tokens.add(l.token);
      assert(c.held.has(name), `held lock ${name} missing from the sorted index`);
    } else {
      assert(!c.held.has(name), `free lock ${name} in the sorted index`);
      assert(l.token === 0, `free lock ${name} keeps token ${l.token}`);
    }
    if (l.inDelay) {
      delayedCount++;
      assert(l.delayMs > 0 && c.delayed.has(l), `delayed lock ${name} not registered`);
    }
    waiterTotal += checkQueue(fsm, l);
  }
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
