// Leader election in the lock FSM (docs/lock-fsm.md "Elections"). An election is a lock
// whose exclusive holder publishes a value (etcd's election service): a campaign is an
// exclusive acquire carrying a value (LockFsm.acquire, so the queue, the fencing token,
// the session's TTL, lock-delay and every later rule on grants apply to it unchanged),
// and the grant stores the value on the LockState. This file holds what only an election
// has: proclaim (the leader replaces its value) and resign (step down, the next candidate
// leads in the same apply; a waiting candidate withdraws).

import type { ApplyResult, FsmEvent } from './results.js';
import type { FsmCore, Session } from './state.js';

export function proclaim(c: FsmCore, name: string, s: Session, value: string, ev: FsmEvent[]): ApplyResult {
  const l = c.locks.get(name);
  // only the leader of an election (a campaign's grant) may change its value
  if (l === undefined || l.holder !== s || l.value === null) return { ok: false, code: 'not_holder' };
  l.value = value;
  ev.push({ type: 'proclaimed', name, sessionId: s.id, fencingToken: l.token, value });
  return { ok: true, kind: 'proclaimed', name, value };
}

export function resign(c: FsmCore, index: number, name: string, s: Session, ev: FsmEvent[]): ApplyResult {
  const l = c.locks.get(name);
  if (l !== undefined && l.holder === s && l.value !== null) {
    ev.push({ type: 'resigned', name, sessionId: s.id, fencingToken: l.token });
    c.free(l, 0, index, ev); // never lock-delay: stepping down is an explicit release
    return { ok: true, kind: 'resigned', name, wasLeader: true };
  }
  // a candidate still waiting gives its place up (the SDK's cleanup after an abandoned
  // campaign), as cancelWait would
  const w = s.waits?.get(name);
  if (w !== undefined && w.value !== undefined) {
    c.endWait(w, 'cancelled');
    ev.push({ type: 'waitEnded', name, sessionId: s.id, reason: 'cancelled' });
    c.pump(w.lock, index, ev);
    return { ok: true, kind: 'resigned', name, wasLeader: false };
  }
  return { ok: false, code: 'not_holder' };
}
