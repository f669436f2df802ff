// LockFsm: the replicated lock state machine. Determinism contract (hashicorp/raft fsm.go
// "Apply must be deterministic"): apply(index, env) depends only on the current state,
// the index and the envelope, never on clocks, randomness or iteration order of hash
// maps, so every replica that applies the same log reaches the same state and returns the
// same results. Expected outcomes are values (ApplyResult); a broken invariant throws.
//
// Cost: every command is O(log n) in sessions, locks and waiters, plus O(k log k) for a
// session ending with k locks/waits (it must touch each); see docs/lock-fsm.md.

import type { Command, Envelope, NewSessionSpec } from './commands.js';
import type { ApplyOutput, ApplyResult, FsmEvent, HolderInfo } from './results.js';
import { exportState, importState } from './snapshot.js';
import { FsmCore, LockState, Session, assert, lockHeld, newCore, type LockFsmOptions, type SemState, type Waiter } from './state.js';
import { semAcquire, semCancelWait, semEndSession, semRelease, semSetLimit } from './semaphores.js';
import { compareStrings } from './names.js';
import { expireHold, grantsWithMaxHold, holdLeft, holdsGrant, revoke, type HoldInfo } from './holds.js';
import type { GrantKind } from './results.js';
import { proclaim, resign } from './elections.js';
import { LOCK_SET_STEPS, acquireAll, cancelSet, endWaitsWithSets, releaseAll } from './lock-sets.js';
import { cycleOfNewWait } from './deadlock.js';

export type { LockFsmOptions } from './state.js';
export type { HoldInfo } from './holds.js';

export interface SessionInfo {
  sessionId: string;
  owner: string;
  ttlMs: number;
  lockDelayMs: number;
  /** the API token that opened it; absent when auth was off */
  principal?: string;
  /** held locks, sorted */
  locks: string[];
  /** locks it waits for, sorted */
  waiting: string[];
}

/** one grant a session holds (LockFsm.sessionGrants): what the keepalive answer lists */
export interface SessionGrantInfo {
  /** 'election': the exclusive grant of a campaign won (the lock carries a value) */
  kind: 'lock' | 'semaphore' | 'election';
  name: string;
  fencingToken: number;
  /** locks only: a shared grant */
  shared?: true;
  /** requests waiting on the name (docs/contract.md §5 "Contention"): a lock set waiting
   *  on it counts once */
  waiters: number;
}

export interface LockInfo {
  name: string;
  held: boolean;
  /** the exclusive holder */
  holder?: HolderInfo;
  /** while held: the mode of its grants */
  mode?: 'exclusive' | 'shared';
  /** while held: every holder (one exclusive, or the shared holders sorted by token) */
  holders?: (HolderInfo & { mode: 'exclusive' | 'shared' })[];
  waiters: number;
  inDelay: boolean;
}

export interface LockWaiterInfo { sessionId: string; owner: string; mode: 'exclusive' | 'shared'; position: number }

export interface SemaphoreInfo {
  name: string;
  /** 0 for an idle semaphore (it keeps no state) */
  limit: number;
  inUse: number;
  /** sorted by token (grant order) */
  holders: { sessionId: string; owner: string; permits: number; fencingToken: number }[];
  waiters: { sessionId: string; owner: string; permits: number; position: number }[];
}

export interface ElectionInfo {
  name: string;
  /** the session whose campaign holds the lock, with its value; null while no campaign
   *  holds it (free, in lock-delay, or held by a plain acquire or shares) */
  leader: { sessionId: string; owner: string; value: string; fencingToken: number } | null;
  /** requests queued for the lock (campaigns and plain acquires alike) */
  waiters: number;
}

/** a queued wait as the lessor needs it: wait_ms, its identity (the index that queued it,
 *  0 if unknown) and the log time it was queued at (Waiter.queuedAtMs) */
export interface WaitInfo {
  waitMs: number;
  since: number;
  queuedAtMs: number;
}

export interface FsmCounts {
  sessions: number;
  heldLocks: number;
  waiters: number;
  locksInDelay: number;
  /** semaphores with holders or waiters */
  semaphores: number;
  /** permits held over all semaphores */
  semaphoresInUse: number;
  semaphoreWaiters: number;
  /** elections with a leader (locks held by a campaign's grant) */
  electionLeaders: number;
}

export class LockFsm {
  /** @internal the state; snapshot.ts reads and builds it */
  core: FsmCore;

  constructor(readonly options: LockFsmOptions = {}) {
    this.core = newCore(options, LOCK_SET_STEPS);
  }

  get lastAppliedIndex(): number {
    return this.core.lastApplied;
  }

  /** the log time of the applied state (ms): the highest Envelope.atMs applied so far,
   *  the clock Idempotency-Keys age by (docs/lock-fsm.md "Log time") */
  get logTimeMs(): number {
    return this.core.idem.nowMs;
  }

  /** the highest fencing token granted so far */
  get lastToken(): number {
    return this.core.lastToken;
  }

  /** Applies one committed entry. `index` must grow strictly from call to call. */
  apply(index: number, env: Envelope): ApplyOutput {
    const c = this.core;
    assert(Number.isSafeInteger(index) && index > c.lastApplied, `apply index ${index} not above last applied ${c.lastApplied}`);
    c.lastApplied = index;
    c.idem.advance(env.atMs);
    const key = env.idempotencyKey;
    if (key !== undefined) {
      // a retry of the key's first request gets its first answer; any other request with
      // the key is refused and changes nothing (docs/lock-fsm.md "Idempotency")
      const seen = c.idem.check(key, env);
      if (seen !== undefined) {
        if ('replay' in seen) return { result: seen.replay, events: [], replayed: true };
        return { result: { ok: false, code: 'idempotency_key_reused', differs: seen.reused }, events: [] };
      }
    }
    const events: FsmEvent[] = [];
    const result = this.dispatch(index, env.cmd, events, key);
    // A limit refusal changed nothing and is transient: a retry with the same key may
    // succeed once there is room, so it is not remembered. Nor is session_exists: it
    // changed nothing, and the leader retries at once with a fresh id under the same key.
    if (key !== undefined && !(!result.ok && (result.code === 'too_many_requests' || result.code === 'session_exists'))) c.idem.put(key, result, env);
    return { result, events };
  }

  private dispatch(index: number, cmd: Command, ev: FsmEvent[], key: string | undefined): ApplyResult {
    switch (cmd.kind) {
      case 'openSession': return this.openSession(cmd, ev);
      case 'closeSession': {
        const denied = this.refuseActor(cmd.sessionId, cmd.actor);
        return denied ?? this.endSession(cmd.sessionId, 'closed', index, ev);
      }
      case 'expireSession': return this.endSession(cmd.sessionId, 'expired', index, ev);
      case 'acquire': return this.acquire(index, cmd, ev, key);
      case 'campaign': {
        const { value, kind: _campaign, ...rest } = cmd;
        return this.acquire(index, { kind: 'acquire', ...rest }, ev, key, value);
      }
      case 'proclaim':
      case 'resign': {
        const s = this.core.sessions.get(cmd.sessionId);
        if (s === undefined) return { ok: false, code: 'session_not_found' };
        const denied = this.refuseActor(cmd.sessionId, cmd.actor);
        if (denied) return denied;
        return cmd.kind === 'proclaim' ? proclaim(this.core, cmd.name, s, cmd.value, ev) : resign(this.core, index, cmd.name, s, ev);
      }
      case 'release': return this.release(index, cmd, ev);
      case 'acquireAll': {
        const who = this.acquirer(cmd);
        if ('refused' in who) return who.refused;
        const ns = cmd.newSession;
        const open = (): Session => this.createSession(cmd.sessionId, ns!.ttlMs, ns!.owner, ns!.lockDelayMs, ns!.principal ?? '', ev);
        return acquireAll(this.core, index, cmd, { s: who.s, owner: who.owner, open, room: () => this.locksRoom() }, ev, key);
      }
      case 'releaseAll': {
        const s = this.core.sessions.get(cmd.sessionId);
        if (s === undefined) return { ok: false, code: 'session_not_found' };
        return this.refuseActor(cmd.sessionId, cmd.actor) ?? releaseAll(this.core, index, cmd.names, s, ev);
      }
      case 'cancelWait': return this.cancelWait(index, cmd, ev);
      case 'endLockDelay': return this.endLockDelay(index, cmd, ev);
      case 'barrier': return { ok: true, kind: 'noop' };
      case 'semAcquire': return this.semAcquire(index, cmd, ev, key);
      case 'semRelease': {
        const s = this.core.sessions.get(cmd.sessionId);
        if (s === undefined) return { ok: false, code: 'session_not_found' };
        const r = this.refuseActor(cmd.sessionId, cmd.actor) ?? semRelease(this.core, index, cmd.name, s, ev);
        if (r.ok && cmd.settles !== undefined) this.core.idem.settleRelease(cmd.settles, cmd.name, 'sem_released');
        return r;
      }
      case 'semSetLimit': return semSetLimit(this.core, index, cmd.name, cmd.limit, ev);
      case 'revoke': return revoke(this.core, index, cmd, ev);
      case 'expireHold': return expireHold(this.core, index, cmd, ev, this.options.testExpireHoldIgnoresToken !== true);
      case 'semCancelWait': {
        const s = this.core.sessions.get(cmd.sessionId);
        if (s === undefined) return { ok: false, code: 'session_not_found' };
        return semCancelWait(this.core, index, cmd.name, s, cmd.since, ev);
      }
    }
  }

  /** who asks, for an acquire of a lock or a semaphore: the existing session (checked, and
   *  the actor allowed to use it) or none when the same entry opens one (checked it may) */
  private acquirer(cmd: { sessionId: string; newSession?: NewSessionSpec; actor?: string; owner?: string }): { refused: ApplyResult } | { s: Session | null; owner: string } {
    const ns = cmd.newSession;
    if (ns !== undefined) {
      const refused = this.refuseNewSession(cmd.sessionId, ns.principal ?? '');
      return refused ? { refused } : { s: null, owner: cmd.owner ?? ns.owner };
    }
    const s = this.core.sessions.get(cmd.sessionId) ?? null;
    if (s === null) return { refused: { ok: false, code: 'session_not_found' } };
    const denied = this.refuseActor(cmd.sessionId, cmd.actor);
    return denied ? { refused: denied } : { s, owner: cmd.owner ?? s.owner };
  }

  private semAcquire(index: number, cmd: Extract<Command, { kind: 'semAcquire' }>, ev: FsmEvent[], key: string | undefined): ApplyResult {
    const c = this.core;
    const ns = cmd.newSession;
    const who = this.acquirer(cmd);
    if ('refused' in who) return who.refused;
    const { s, owner } = who;
    const open = (): Session => this.createSession(cmd.sessionId, ns!.ttlMs, ns!.owner, ns!.lockDelayMs, ns!.principal ?? '', ev);
    return semAcquire(c, index, cmd, s, owner, open, () => this.locksFull(), ev, key);
  }

  private openSession(cmd: Extract<Command, { kind: 'openSession' }>, ev: FsmEvent[]): ApplyResult {
    const principal = cmd.principal ?? '';
    const refused = this.refuseNewSession(cmd.sessionId, principal);
    if (refused) return refused;
    const s = this.createSession(cmd.sessionId, cmd.ttlMs, cmd.owner, cmd.lockDelayMs, principal, ev);
    return { ok: true, kind: 'session_opened', sessionId: s.id, ttlMs: s.ttlMs };
  }

  private refuseNewSession(id: string, principal: string): ApplyResult | null {
    const c = this.core;
    if (c.sessions.has(id)) return { ok: false, code: 'session_exists' };
    if (c.sessions.size >= c.limits.maxSessions) return { ok: false, code: 'too_many_requests', limit: 'sessions' };
    if (principal !== '' && (c.perPrincipal.get(principal) ?? 0) >= c.limits.maxSessionsPerPrincipal) return { ok: false, code: 'too_many_requests', limit: 'sessions_per_token' };
    return null;
  }

  /** Capability hygiene (docs/security.md "Sessions belong to their token"): a session id alone does not let a caller act on the
   *  session; the actor, when the leader names one, must be the principal that opened it.
   *  An unknown session is left to the command's own session_not_found. */
  private refuseActor(sessionId: string, actor: string | undefined): ApplyResult | null {
    if (actor === undefined) return null;
    const s = this.core.sessions.get(sessionId);
    if (s !== undefined && s.principal !== actor) return { ok: false, code: 'permission_denied' };
    return null;
  }

  /** limits.max_locks: would one more lock entry or queued wait exceed the bound? */
  private locksFull(): boolean {
    return this.locksRoom() <= 0;
  }

  /** limits.max_locks: how many more lock entries and queued waits fit */
  private locksRoom(): number {
    const c = this.core;
    return c.limits.maxLocks - (c.locks.size + c.waiterTotal + c.sems.size + c.semWaiterTotal);
  }

  private createSession(id: string, ttlMs: number, owner: string, lockDelayMs: number, principal: string, ev: FsmEvent[]): Session {
    const s = new Session(id, ttlMs, owner, lockDelayMs, principal);
    this.core.addSession(s);
    ev.push({ type: 'sessionOpened', sessionId: id, ttlMs });
    return s;
  }

  /** close (locks pass to waiters at once) or expiry (locks enter lock-delay first) */
  private endSession(id: string, reason: 'closed' | 'expired', index: number, ev: FsmEvent[]): ApplyResult {
    const c = this.core;
    const s = c.sessions.get(id);
    if (s === undefined) return reason === 'expired' ? { ok: true, kind: 'noop' } : { ok: false, code: 'session_not_found' };
    // Its waits go first, so none of its own released locks can be handed back to it.
    // (While any lock set waits — its own or another session's — every wait leaves its queue
    // before any queue is served: a set's grant serves several queues, which must not reach
    // a wait of this session still to be ended; docs/lock-fsm.md "Lock sets".)
    if (c.lockSets.size > 0) endWaitsWithSets(c, s, index, ev);
    if (s.waits !== null) {
      for (const name of [...s.waits.keys()].sort(compareStrings)) {
        const w = s.waits.get(name) as Waiter;
        c.endWait(w, 'session_ended');
        ev.push({ type: 'waitEnded', name, sessionId: id, reason: 'session_ended' });
        c.pump(w.lock, index, ev); // it may have been the exclusive request that held shares back
      }
    }
    const released = c.heldNames(s);
    const delayMs = reason === 'expired' ? s.lockDelayMs : 0;
    for (const name of released) {
      const l = c.locks.get(name) as LockState;
      if (l.holder === s) {
        ev.push(l.value !== null ? { type: 'released', name, sessionId: id, fencingToken: l.token, reason, election: true } : { type: 'released', name, sessionId: id, fencingToken: l.token, reason });
        c.free(l, delayMs, index, ev);
      } else {
        const share = l.shares?.get(id);
        assert(share !== undefined, `session ${id} lists ${name} but holds no share of it`);
        ev.push({ type: 'released', name, sessionId: id, fencingToken: share.token, mode: 'shared', reason });
        c.freeShare(l, s, delayMs, index, ev);
      }
    }
    semEndSession(c, index, s, reason, ev);
    assert(s.heldHead === null && s.heldCount === 0 && s.waits === null && s.shares === null && s.sems === null && s.semWaits === null, `session ${id} still linked after its end`);
    c.removeSession(s);
    ev.push({ type: 'sessionEnded', sessionId: id, reason, released });
    return { ok: true, kind: 'session_closed', sessionId: id, released };
  }

  /** value: a campaign's (docs/lock-fsm.md "Elections"): an exclusive acquire whose grant
   *  makes the session the election's leader with that value */
  private acquire(index: number, cmd: Extract<Command, { kind: 'acquire' }>, ev: FsmEvent[], key: string | undefined, value?: string): ApplyResult {
    const c = this.core;
    const ns = cmd.newSession;
    const who = this.acquirer(cmd);
    if ('refused' in who) return who.refused;
    const owner = who.owner;
    let s = who.s;
    const l = c.locks.get(cmd.name);
    const shared = cmd.mode === 'shared';
    // Re-acquiring a lock the session holds is not a new grant: same token. An exclusive
    // grant also answers a shared request; a share is never upgraded (two sharers
    // upgrading would wait for each other for ever): refused as held.
    // A campaign by the leader answers its leadership (value unchanged: proclaim changes
    // it); a campaign by the holder of a plain grant is refused (a name is not both).
    if (l !== undefined && s !== null && l.holder === s) {
      if (value !== undefined) return l.value === null ? lockHeld(l) : { ok: true, kind: 'acquired', name: l.name, sessionId: s.id, fencingToken: l.token, ttlMs: s.ttlMs, value: l.value };
      return { ok: true, kind: 'acquired', name: l.name, sessionId: s.id, fencingToken: l.token, ttlMs: s.ttlMs };
    }
    const share = s === null ? undefined : l?.shares?.get(s.id);
    if (share !== undefined) return shared && value === undefined ? { ok: true, kind: 'acquired', name: share.lock.name, sessionId: share.session.id, fencingToken: share.token, ttlMs: share.session.ttlMs, mode: 'shared' } : lockHeld(share.lock);
    if (l === undefined || c.grantable(l, shared)) {
      if (l === undefined && this.locksFull()) return { ok: false, code: 'too_many_requests', limit: 'locks' };
      s ??= this.createSession(cmd.sessionId, ns!.ttlMs, ns!.owner, ns!.lockDelayMs, ns!.principal ?? '', ev);
      const lock = c.lockFor(cmd.name);
      if (shared) {
        const token = c.grantShare(lock, s, owner, index, ev, cmd.maxHoldMs ?? 0);
        return { ok: true, kind: 'acquired', name: cmd.name, sessionId: s.id, fencingToken: token, ttlMs: s.ttlMs, mode: 'shared' };
      }
      const token = c.grant(lock, s, owner, index, ev, cmd.maxHoldMs ?? 0, value);
      if (value !== undefined) return { ok: true, kind: 'acquired', name: cmd.name, sessionId: s.id, fencingToken: token, ttlMs: s.ttlMs, value };
      return { ok: true, kind: 'acquired', name: cmd.name, sessionId: s.id, fencingToken: token, ttlMs: s.ttlMs };
    }
    if (cmd.waitMs === 0) return lockHeld(l);
    const mine = s?.waits?.get(cmd.name);
    if (mine !== undefined) {
      // The request joins the session's wait only if that wait's grant would answer it, as
      // a grant held would (above): a shared wait never answers an exclusive request or a
      // campaign (a share is never upgraded), a plain wait never answers a campaign (a name
      // is not both). Joining, an exclusive request would be answered a share.
      const answers = mine.shared ? shared && value === undefined : value === undefined || mine.value !== undefined;
      if (!answers && !c.testJoinAnyWait) return lockHeld(l);
      return { ok: true, kind: 'queued', name: cmd.name, sessionId: cmd.sessionId, position: positionOf(mine) };
    }
    if (l.waiterCount >= c.limits.maxWaitersPerLock) return { ok: false, code: 'too_many_requests', limit: 'waiters' };
    if (this.locksFull()) return { ok: false, code: 'too_many_requests', limit: 'locks' };
    // docs/lock-fsm.md "Deadlock detection": a wait that would close a cycle is refused
    if (s !== null) {
      const cycle = cycleOfNewWait(c, s, { target: 'lock', names: [cmd.name], shared });
      if (cycle !== null) return { ok: false, code: 'deadlock', cycle };
    }
    s ??= this.createSession(cmd.sessionId, ns!.ttlMs, ns!.owner, ns!.lockDelayMs, ns!.principal ?? '', ev);
    c.enqueue(l, s, owner, cmd.waitMs, index, key, shared, cmd.maxHoldMs ?? 0, value);
    ev.push(shared ? { type: 'waiting', name: cmd.name, sessionId: s.id, mode: 'shared' } : { type: 'waiting', name: cmd.name, sessionId: s.id });
    return { ok: true, kind: 'queued', name: cmd.name, sessionId: s.id, position: l.waiterCount };
  }

  private release(index: number, cmd: Extract<Command, { kind: 'release' }>, ev: FsmEvent[]): ApplyResult {
    const c = this.core;
    const s = c.sessions.get(cmd.sessionId);
    if (s === undefined) return { ok: false, code: 'session_not_found' };
    const denied = this.refuseActor(cmd.sessionId, cmd.actor);
    if (denied) return denied;
    const l = c.locks.get(cmd.name);
    const share = l?.shares?.get(s.id);
    if (l !== undefined && share !== undefined) {
      // a shared holder releases its own share only
      if (cmd.fencingToken !== undefined && cmd.fencingToken !== share.token) return { ok: false, code: 'not_holder' };
      ev.push({ type: 'released', name: cmd.name, sessionId: s.id, fencingToken: share.token, mode: 'shared', reason: 'released' });
      c.freeShare(l, s, 0, index, ev);
      if (cmd.settles !== undefined) c.idem.settleRelease(cmd.settles, cmd.name);
      return { ok: true, kind: 'released', name: cmd.name };
    }
    if (l === undefined || l.holder !== s) return { ok: false, code: 'not_holder' };
    if (cmd.fencingToken !== undefined && cmd.fencingToken !== l.token) return { ok: false, code: 'not_holder' };
    ev.push(l.value !== null ? { type: 'released', name: cmd.name, sessionId: s.id, fencingToken: l.token, reason: 'released', election: true } : { type: 'released', name: cmd.name, sessionId: s.id, fencingToken: l.token, reason: 'released' });
    c.free(l, 0, index, ev);
    if (cmd.settles !== undefined) c.idem.settleRelease(cmd.settles, cmd.name);
    return { ok: true, kind: 'released', name: cmd.name };
  }

  private cancelWait(index: number, cmd: Extract<Command, { kind: 'cancelWait' }>, ev: FsmEvent[]): ApplyResult {
    const c = this.core;
    const s = c.sessions.get(cmd.sessionId);
    if (s === undefined) return { ok: false, code: 'session_not_found' };
    const w = s.waits?.get(cmd.name);
    if (w !== undefined && w.set !== null && names(w.since, cmd.since)) {
      // a place of a lock set: the set waits as one request, and its wait ends as one
      cancelSet(c, w.set, 'cancelled', index, ev);
      return { ok: true, kind: 'wait_cancelled', name: cmd.name, sessionId: s.id };
    }
    if (w !== undefined && names(w.since, cmd.since)) {
      c.endWait(w, 'cancelled');
      ev.push({ type: 'waitEnded', name: cmd.name, sessionId: s.id, reason: 'cancelled' });
      // a waiting exclusive request at the head held the shared ones behind it back
      c.pump(w.lock, index, ev);
      return { ok: true, kind: 'wait_cancelled', name: cmd.name, sessionId: s.id };
    }
    // The grant may have won the race against the timeout: tell the proposer it holds it.
    const l = c.locks.get(cmd.name);
    if (l !== undefined && l.holder === s) {
      if (l.value !== null) return { ok: true, kind: 'acquired', name: l.name, sessionId: s.id, fencingToken: l.token, ttlMs: s.ttlMs, value: l.value };
      return { ok: true, kind: 'acquired', name: l.name, sessionId: s.id, fencingToken: l.token, ttlMs: s.ttlMs };
    }
    const share = l?.shares?.get(s.id);
    if (share !== undefined) return { ok: true, kind: 'acquired', name: cmd.name, sessionId: s.id, fencingToken: share.token, ttlMs: s.ttlMs, mode: 'shared' };
    return { ok: true, kind: 'noop' };
  }

  private endLockDelay(index: number, cmd: Extract<Command, { kind: 'endLockDelay' }>, ev: FsmEvent[]): ApplyResult {
    const l = this.core.locks.get(cmd.name);
    if (l !== undefined && l.inDelay && names(l.delaySince, cmd.since)) this.core.endDelay(l, index, ev);
    return { ok: true, kind: 'noop' };
  }

  // ---- queries (pure reads) ----

  getSession(id: string): SessionInfo | undefined {
    const s = this.core.sessions.get(id);
    if (s === undefined) return undefined;
    const waiting = s.waits === null ? [] : [...s.waits.keys()].sort(compareStrings);
    const info: SessionInfo = { sessionId: s.id, owner: s.owner, ttlMs: s.ttlMs, lockDelayMs: s.lockDelayMs, locks: this.core.heldNames(s), waiting };
    if (s.principal !== '') info.principal = s.principal;
    return info;
  }

  /** every grant the session holds, locks (and elections) by name, then semaphores by
   *  name; [] for an unknown session */
  sessionGrants(id: string): SessionGrantInfo[] {
    const s = this.core.sessions.get(id);
    if (s === undefined) return [];
    const locks: SessionGrantInfo[] = [];
    for (let l = s.heldHead; l !== null; l = l.heldNext) locks.push({ kind: l.value !== null ? 'election' : 'lock', name: l.name, fencingToken: l.token, waiters: l.waiterCount });
    if (s.shares !== null) for (const sh of s.shares.values()) locks.push({ kind: 'lock', name: sh.lock.name, fencingToken: sh.token, shared: true, waiters: sh.lock.waiterCount });
    locks.sort((a, b) => compareStrings(a.name, b.name));
    const sems: SessionGrantInfo[] = [];
    if (s.sems !== null) for (const [name, h] of s.sems) sems.push({ kind: 'semaphore', name, fencingToken: h.token, waiters: h.sem.queue.length });
    sems.sort((a, b) => compareStrings(a.name, b.name));
    return [...locks, ...sems];
  }

  getLock(name: string): LockInfo {
    const l = this.core.locks.get(name);
    if (l === undefined) return { name, held: false, waiters: 0, inDelay: false };
    return lockInfo(l);
  }

  /** an election's leader and value (docs/lock-fsm.md "Elections") */
  getElection(name: string): ElectionInfo {
    const l = this.core.locks.get(name);
    if (l === undefined) return { name, leader: null, waiters: 0 };
    const leader = l.holder !== null && l.value !== null ? { sessionId: l.holder.id, owner: l.holderOwner, value: l.value, fencingToken: l.token } : null;
    return { name, leader, waiters: l.waiterCount };
  }

  /** the lock's queue in order, with the mode each waiter asks for */
  lockQueue(name: string): LockWaiterInfo[] {
    const out: LockWaiterInfo[] = [];
    const l = this.core.locks.get(name);
    for (let w = l?.head ?? null; w !== null; w = w.next) out.push({ sessionId: w.session.id, owner: w.owner, mode: w.shared ? 'shared' : 'exclusive', position: out.length + 1 });
    return out;
  }

  getSemaphore(name: string): SemaphoreInfo {
    const sem = this.core.sems.get(name);
    if (sem === undefined) return { name, limit: 0, inUse: 0, holders: [], waiters: [] };
    return semInfo(sem);
  }

  /** semaphores (with holders or waiters) whose name starts with prefix, sorted, at most limit */
  listSemaphores(prefix: string, limit: number): SemaphoreInfo[] {
    const names = [...this.core.sems.keys()].filter((n) => n.startsWith(prefix)).sort(compareStrings).slice(0, Math.max(0, limit));
    return names.map((n) => semInfo(this.core.sems.get(n) as SemState));
  }

  /** held locks whose name starts with prefix, sorted by name, at most limit */
  /** elections with a leader (a held lock whose grant carries a value) whose name starts
   *  with prefix, sorted by name, at most limit (the status page) */
  listElections(prefix: string, limit: number): ElectionInfo[] {
    const out: ElectionInfo[] = [];
    if (limit <= 0) return out;
    for (const name of this.core.held.from(prefix)) {
      if (!name.startsWith(prefix)) break;
      const l = this.core.locks.get(name) as LockState;
      if (l.value === null || l.holder === null) continue;
      out.push(this.getElection(name));
      if (out.length >= limit) break;
    }
    return out;
  }

  listLocks(prefix: string, limit: number): LockInfo[] {
    const out: LockInfo[] = [];
    if (limit <= 0) return out;
    for (const name of this.core.held.from(prefix)) {
      if (!name.startsWith(prefix)) break;
      out.push(lockInfo(this.core.locks.get(name) as LockState));
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Chubby's CheckSequencer: does this token still hold the lock? */
  check(name: string, fencingToken: number): boolean {
    const l = this.core.locks.get(name);
    if (l === undefined) return false;
    if (l.holder !== null) return l.token === fencingToken;
    if (l.shares !== null) for (const sh of l.shares.values()) if (sh.token === fencingToken) return true;
    return false;
  }

  /** is this semaphore grant (its token) still held? */
  checkSemaphore(name: string, fencingToken: number): boolean {
    const sem = this.core.sems.get(name);
    if (sem === undefined) return false;
    for (const h of sem.holders.values()) if (h.token === fencingToken) return true;
    return false;
  }

  /** every live session (for Lessor.promote) */
  *sessions(): Generator<{ sessionId: string; ttlMs: number }> {
    for (const s of this.core.sessions.values()) yield { sessionId: s.id, ttlMs: s.ttlMs };
  }

  /** locks in lock-delay, sorted by name; since: the delay's identity (0: unknown) */
  locksInDelay(): { name: string; delayMs: number; since: number }[] {
    return [...this.core.delayed].map((l) => ({ name: l.name, delayMs: l.delayMs, since: l.delaySince })).sort((a, b) => compareStrings(a.name, b.name));
  }

  /** every queued wait, in queue order per lock, then per semaphore (semaphore: true);
   *  since: the wait's identity (0: unknown); queuedAtMs: the log time it was queued at. A
   *  lock set waits as one request: it is listed once, under its first place (a cancelWait
   *  naming any of its places ends the set). */
  *waits(): Generator<WaitInfo & { name: string; sessionId: string; semaphore?: true }> {
    for (const l of this.core.locks.values()) {
      for (let w = l.head; w !== null; w = w.next) if (w.set === null || w.set.members[0] === w) yield { name: l.name, sessionId: w.session.id, waitMs: w.waitMs, since: w.since, queuedAtMs: w.queuedAtMs };
    }
    for (const sem of this.core.sems.values()) {
      for (const w of sem.queue) yield { name: sem.name, sessionId: w.session.id, waitMs: w.waitMs, since: w.since, queuedAtMs: w.queuedAtMs, semaphore: true };
    }
  }

  /** every grant with a max hold (for Lessor.promote): its deadline is grantedAtMs +
   *  maxHoldMs in log time (docs/lock-fsm.md "Revocation and maximum hold") */
  grantsWithMaxHold(): HoldInfo[] {
    return grantsWithMaxHold(this.core);
  }

  /** does this grant (by its token) still stand? */
  holdsGrant(target: GrantKind, name: string, sessionId: string, fencingToken: number): boolean {
    return holdsGrant(this.core, target, name, sessionId, fencingToken);
  }

  /** at most how much longer this grant can last, by its max hold (ms; holds.ts holdLeft);
   *  undefined without a max hold, or when the grant no longer stands */
  holdLeftMs(target: GrantKind, name: string, sessionId: string, fencingToken: number): number | undefined {
    return holdLeft(this.core, target, name, sessionId, fencingToken);
  }

  /** what an Idempotency-Key answers now: its first answer, or — for a request that
   *  queued — what its wait ended with (IdempotencyTable.endWait); undefined when it is not
   *  remembered */
  answerOf(key: string): ApplyResult | undefined {
    return this.core.idem.get(key);
  }

  /** the session's current wait for `name`, if it waits (since: the wait's identity) */
  waitOf(name: string, sessionId: string): WaitInfo | undefined {
    const w = this.core.sessions.get(sessionId)?.waits?.get(name);
    return w === undefined ? undefined : { waitMs: w.waitMs, since: w.since, queuedAtMs: w.queuedAtMs };
  }

  /** does the wait of `sessionId` for `name` begun at index `since` still stand (since 0:
   *  any wait of the session for it)? The lessor's WaitLive (due) */
  waitStands(target: GrantKind, name: string, sessionId: string, since: number): boolean {
    const w = target === 'semaphore' ? this.semWaitOf(name, sessionId) : this.waitOf(name, sessionId);
    return w !== undefined && (since === 0 || w.since === since);
  }

  /** the session's current wait for semaphore `name`, if it waits */
  semWaitOf(name: string, sessionId: string): WaitInfo | undefined {
    const w = this.core.sessions.get(sessionId)?.semWaits?.get(name);
    return w === undefined ? undefined : { waitMs: w.waitMs, since: w.since, queuedAtMs: w.queuedAtMs };
  }

  counts(): FsmCounts {
    const c = this.core;
    return { sessions: c.sessions.size, heldLocks: c.held.size, waiters: c.waiterTotal, locksInDelay: c.delayed.size, semaphores: c.sems.size, semaphoresInUse: c.semInUse, semaphoreWaiters: c.semWaiterTotal, electionLeaders: c.electionLeaders };
  }

  // ---- snapshots ----

  /** Canonical bytes of the state: equal states give identical bytes, whatever the history. */
  snapshot(encode: (v: unknown) => Uint8Array): Uint8Array {
    return encode(exportState(this));
  }

  /** Replaces the state with a snapshot's. Validates everything first: on a corrupt
   *  snapshot it throws a clear error and the current state is left untouched. */
  restore(bytes: Uint8Array, decode: (b: Uint8Array) => unknown): void {
    this.core = importState(decode(bytes), this.options);
  }

  /** A state machine rebuilt from exportState's output (validated). */
  static fromState(obj: unknown, options: LockFsmOptions = {}): LockFsm {
    const fsm = new LockFsm(options);
    fsm.core = importState(obj, options);
    return fsm;
  }

  static fromSnapshot(bytes: Uint8Array, decode: (b: Uint8Array) => unknown, options: LockFsmOptions = {}): LockFsm {
    return LockFsm.fromState(decode(bytes), options);
  }
}

/**
 * Does a lessor command naming `since` apply to the item whose identity is `current`?
 * Absent on the command (an entry written before commands named their item) or unknown on
 * the item (restored from a snapshot written before items had an identity): yes, the
 * old rule, so entries and snapshots of earlier versions apply exactly as they did.
 * Otherwise only the item it names (docs/lock-fsm.md "Lessor commands name what they end").
 */
function names(current: number, since: number | undefined): boolean {
  return since === undefined || current === 0 || current === since;
}

function lockInfo(l: LockState): LockInfo {
  if (l.holder !== null) {
    const holder = { sessionId: l.holder.id, owner: l.holderOwner, fencingToken: l.token };
    return { name: l.name, held: true, holder, waiters: l.waiterCount, inDelay: false, mode: 'exclusive', holders: [{ sessionId: holder.sessionId, owner: holder.owner, fencingToken: holder.fencingToken, mode: 'exclusive' }] };
  }
  if (l.shares !== null) {
    const holders = [...l.shares.values()].sort((a, b) => a.token - b.token).map((sh) => ({ sessionId: sh.session.id, owner: sh.owner, fencingToken: sh.token, mode: 'shared' as const }));
    return { name: l.name, held: true, waiters: l.waiterCount, inDelay: l.inDelay, mode: 'shared', holders };
  }
  return { name: l.name, held: false, waiters: l.waiterCount, inDelay: l.inDelay };
}

function semInfo(sem: SemState): SemaphoreInfo {
  const holders = [...sem.holders.values()].sort((a, b) => a.token - b.token).map((h) => ({ sessionId: h.session.id, owner: h.owner, permits: h.permits, fencingToken: h.token }));
  const waiters = sem.queue.map((w, i) => ({ sessionId: w.session.id, owner: w.owner, permits: w.permits, position: i + 1 }));
  return { name: sem.name, limit: sem.limit, inUse: sem.inUse, holders, waiters };
}

/** 1-based place in the queue. O(position) ≤ maxWaitersPerLock: only a repeated acquire
 *  by a session that already waits needs it. */
function positionOf(w: Waiter): number {
  let n = 1;
  for (let p = w.prev; p !== null; p = p.prev) n++;
  return n;
}
