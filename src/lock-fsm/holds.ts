// Revocation and maximum hold (docs/lock-fsm.md "Revocation and maximum hold"): the two
// ways a grant ends while its session lives. Both are generic over what the grant is of
// (a lock's exclusive or shared grant, a semaphore's permits), so any further kind of
// grant (an election's leadership) only has to say where its grants are.
//  - revoke: an administrator takes grants away, at once and WITHOUT lock-delay (the
//    holder is known to be stuck or gone); the next waiters are served in the same apply.
//  - expireHold: the leader's lessor ends a grant whose max_hold_ms has run out. It names
//    the grant by its fencing token, so a stale or duplicated copy (the lessor re-proposes
//    until it sees the apply) does nothing once that grant is over, even if the same
//    session holds the same name again. A lock's grant then enters the session's
//    lock-delay, as on session expiry: the holder may still be running and not know.

import type { Command } from './commands.js';
import type { ApplyResult, FsmEvent, GrantKind, RevokedGrant } from './results.js';
import { releaseHolder } from './semaphores.js';
import type { FsmCore, LockState, MaxHold, SemHolder, Session, Share } from './state.js';
import { compareStrings } from './names.js';

/** one grant of a name, whatever it is of */
interface Grant {
  session: Session;
  token: number;
  shared: boolean;
  hold: MaxHold;
  /** ends it: delayMs > 0 puts a lock into lock-delay */
  end(delayMs: number, index: number, ev: FsmEvent[]): void;
}

function exclusive(c: FsmCore, l: LockState, s: Session): Grant {
  return { session: s, token: l.token, shared: false, hold: l, end: (d, i, ev) => c.free(l, d, i, ev) };
}
function share(c: FsmCore, l: LockState, sh: Share): Grant {
  return { session: sh.session, token: sh.token, shared: true, hold: sh, end: (d, i, ev) => c.freeShare(l, sh.session, d, i, ev) };
}
function permits(c: FsmCore, h: SemHolder): Grant {
  return { session: h.session, token: h.token, shared: false, hold: h, end: (_d, i, ev) => releaseHolder(c, h, i, ev) };
}

/** every grant of `name`, sorted by session id */
function grantsOf(c: FsmCore, target: GrantKind, name: string): Grant[] {
  const out: Grant[] = [];
  if (target === 'lock') {
    const l = c.locks.get(name);
    if (l === undefined) return out;
    if (l.holder !== null) out.push(exclusive(c, l, l.holder));
    if (l.shares !== null) for (const sh of l.shares.values()) out.push(share(c, l, sh));
  } else {
    const sem = c.sems.get(name);
    if (sem === undefined) return out;
    for (const h of sem.holders.values()) out.push(permits(c, h));
  }
  return out.sort((a, b) => compareStrings(a.session.id, b.session.id));
}

/** the session's grant of `name`, O(1) */
function grantOf(c: FsmCore, target: GrantKind, name: string, sessionId: string): Grant | undefined {
  if (target === 'lock') {
    const l = c.locks.get(name);
    if (l === undefined) return undefined;
    if (l.holder !== null && l.holder.id === sessionId) return exclusive(c, l, l.holder);
    const sh = l.shares?.get(sessionId);
    return sh === undefined ? undefined : share(c, l, sh);
  }
  const h = c.sems.get(name)?.holders.get(sessionId);
  return h === undefined ? undefined : permits(c, h);
}

type Revoke = Extract<Command, { kind: 'revoke' }>;
type ExpireHold = Extract<Command, { kind: 'expireHold' }>;

/** revoke: the named session's grant (not_holder if it has none), or every grant of the name */
export function revoke(c: FsmCore, index: number, cmd: Revoke, ev: FsmEvent[]): ApplyResult {
  let grants = grantsOf(c, cmd.target, cmd.name);
  if (cmd.sessionId !== undefined) {
    if (!c.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_not_found' };
    grants = grants.filter((g) => g.session.id === cmd.sessionId);
    if (grants.length === 0) return { ok: false, code: 'not_holder' };
  }
  const revoked: RevokedGrant[] = [];
  for (const g of grants) {
    const e: FsmEvent = { type: 'revoked', kind: cmd.target, name: cmd.name, sessionId: g.session.id, fencingToken: g.token };
    if (g.shared) e.mode = 'shared';
    else if (cmd.target === 'lock' && c.locks.get(cmd.name)?.value != null) e.election = true;
    ev.push(e);
    g.end(0, index, ev);
    revoked.push({ sessionId: g.session.id, fencingToken: g.token });
  }
  return { ok: true, kind: 'revoked', target: cmd.target, name: cmd.name, revoked };
}

/** expireHold: ends the grant it names by token, if that grant still stands and has a max
 *  hold; a no-op otherwise. matchToken false: TEST ONLY (the mutation table in
 *  docs/simulation-lock.md), ends the session's current grant whatever its token. */
export function expireHold(c: FsmCore, index: number, cmd: ExpireHold, ev: FsmEvent[], matchToken = true): ApplyResult {
  const g = grantOf(c, cmd.target, cmd.name, cmd.sessionId);
  if (g === undefined || (matchToken && (g.token !== cmd.fencingToken || g.hold.maxHoldMs === 0))) return { ok: true, kind: 'noop' };
  const e: FsmEvent = { type: 'grantExpired', kind: cmd.target, name: cmd.name, sessionId: g.session.id, fencingToken: g.token, reason: 'max_hold' };
  if (g.shared) e.mode = 'shared';
  else if (cmd.target === 'lock' && c.locks.get(cmd.name)?.value != null) e.election = true;
  ev.push(e);
  g.end(cmd.target === 'lock' ? g.session.lockDelayMs : 0, index, ev);
  return { ok: true, kind: 'noop' };
}

/** a grant with a max hold, for the lessor (promote) and snapshots */
export interface HoldInfo {
  target: GrantKind;
  name: string;
  sessionId: string;
  fencingToken: number;
  maxHoldMs: number;
  /** log time of the apply that made the grant */
  grantedAtMs: number;
}

/** every grant with a max hold: locks by name (exclusive, then shares by session id),
 *  then semaphores by name and session id */
export function grantsWithMaxHold(c: FsmCore): HoldInfo[] {
  const out: HoldInfo[] = [];
  const add = (target: GrantKind, name: string, sessionId: string, token: number, h: MaxHold): void => {
    if (h.maxHoldMs > 0) out.push({ target, name, sessionId, fencingToken: token, maxHoldMs: h.maxHoldMs, grantedAtMs: h.grantedAtMs });
  };
  for (const name of c.held.values()) {
    const l = c.locks.get(name) as LockState;
    if (l.holder !== null) add('lock', name, l.holder.id, l.token, l);
    if (l.shares !== null) for (const sh of [...l.shares.values()].sort((a, b) => compareStrings(a.session.id, b.session.id))) add('lock', name, sh.session.id, sh.token, sh);
  }
  for (const name of [...c.sems.keys()].sort(compareStrings)) {
    const hs = [...(c.sems.get(name)?.holders.values() ?? [])].sort((a: SemHolder, b: SemHolder) => compareStrings(a.session.id, b.session.id));
    for (const h of hs) add('semaphore', name, h.session.id, h.token, h);
  }
  return out;
}

/**
 * How much longer this grant (by token) can last at most, by its max hold: its grant's log
 * time plus max_hold_ms, less the applied state's log time (never below 0). undefined when
 * the grant has no max hold or does not stand. The lessor ends it no earlier (docs/lock-fsm.md
 * "Revocation and maximum hold"), and log time never runs faster than real time, so a
 * client may count this from when it sent the request that is answered with it.
 */
export function holdLeft(c: FsmCore, target: GrantKind, name: string, sessionId: string, fencingToken: number): number | undefined {
  let h: MaxHold | undefined;
  let token = 0;
  if (target === 'lock') {
    const l = c.locks.get(name);
    if (l === undefined) return undefined;
    if (l.holder !== null && l.holder.id === sessionId) {
      h = l;
      token = l.token;
    } else {
      const sh = l.shares?.get(sessionId);
      if (sh !== undefined) {
        h = sh;
        token = sh.token;
      }
    }
  } else {
    const p = c.sems.get(name)?.holders.get(sessionId);
    if (p !== undefined) {
      h = p;
      token = p.token;
    }
  }
  if (h === undefined || token !== fencingToken || h.maxHoldMs === 0) return undefined;
  return Math.max(0, h.grantedAtMs + h.maxHoldMs - c.idem.nowMs);
}

/** does this grant (by token) still stand? */
export function holdsGrant(c: FsmCore, target: GrantKind, name: string, sessionId: string, fencingToken: number): boolean {
  return grantOf(c, target, name, sessionId)?.token === fencingToken;
}
