// LockFsm: the replicated lock state machine. Determinism contract (hashicorp/raft fsm.go
// "Apply must be deterministic"): apply(index, env) depends only on the current state,
// the index and the envelope, never on clocks, randomness or iteration order of hash
// maps, so every replica that applies the same log reaches the same state and returns the
// same results. Expected outcomes are values (ApplyResult); a broken invariant throws.
//
// Cost: every command is O(log n) in sessions, locks and waiters, plus O(k log k) for a
// session ending with k locks/waits (it must touch each); see docs/lock-fsm.md.

import type { Command, Envelope } from './commands.js';
import type { ApplyOutput, ApplyResult, FsmEvent, HolderInfo } from './results.js';
import { exportState, importState } from './snapshot.js';
import { FsmCore, LockState, Session, assert, newCore, type LockFsmOptions, type Waiter } from './state.js';
import { compareStrings } from './names.js';

export type { LockFsmOptions } from './state.js';

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

export interface LockInfo {
  name: string;
  held: boolean;
  holder?: HolderInfo;
  waiters: number;
  inDelay: boolean;
}

export interface FsmCounts {
  sessions: number;
  heldLocks: number;
  waiters: number;
  locksInDelay: number;
}

export class LockFsm {
  /** @internal the state; snapshot.ts reads and builds it */
  core: FsmCore;

  constructor(readonly options: LockFsmOptions = {}) {
    this.core = newCore(options);
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
      const first = c.idem.get(key);
      if (first !== undefined) return { result: first, events: [], replayed: true };
    }
    const events: FsmEvent[] = [];
    const result = this.dispatch(index, env.cmd, events, key);
    // A limit refusal changed nothing and is transient: a retry with the same key may
    // succeed once there is room, so it is not remembered. Nor is session_exists: it
    // changed nothing, and the leader retries at once with a fresh id under the same key.
    if (key !== undefined && !(!result.ok && (result.code === 'too_many_requests' || result.code === 'session_exists'))) c.idem.put(key, result);
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
      case 'release': return this.release(index, cmd, ev);
      case 'cancelWait': return this.cancelWait(cmd, ev);
      case 'endLockDelay': return this.endLockDelay(index, cmd, ev);
      case 'barrier': return { ok: true, kind: 'noop' };
    }
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

  /** Capability hygiene (issue 10): a session id alone does not let a caller act on the
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
    const c = this.core;
    return c.locks.size + c.waiterTotal >= c.limits.maxLocks;
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
    if (s.waits !== null) {
      for (const name of [...s.waits.keys()].sort(compareStrings)) {
        const w = s.waits.get(name) as Waiter;
        c.unlinkWaiter(w);
        c.maybeDrop(w.lock);
        ev.push({ type: 'waitEnded', name, sessionId: id, reason: 'session_ended' });
      }
    }
    const released = c.heldNames(s);
    const delayMs = reason === 'expired' ? s.lockDelayMs : 0;
    for (const name of released) c.free(c.locks.get(name) as LockState, delayMs, index, ev);
    assert(s.heldHead === null && s.heldCount === 0 && s.waits === null, `session ${id} still linked after its end`);
    c.removeSession(s);
    ev.push({ type: 'sessionEnded', sessionId: id, reason, released });
    return { ok: true, kind: 'session_closed', sessionId: id, released };
  }

  private acquire(index: number, cmd: Extract<Command, { kind: 'acquire' }>, ev: FsmEvent[], key: string | undefined): ApplyResult {
    const c = this.core;
    const ns = cmd.newSession;
    let s: Session | null = null;
    if (ns !== undefined) {
      const refused = this.refuseNewSession(cmd.sessionId, ns.principal ?? '');
      if (refused) return refused;
    } else {
      s = c.sessions.get(cmd.sessionId) ?? null;
      if (s === null) return { ok: false, code: 'session_not_found' };
      const denied = this.refuseActor(cmd.sessionId, cmd.actor);
      if (denied) return denied;
    }
    const owner = cmd.owner ?? (s !== null ? s.owner : (ns as { owner: string }).owner);
    const l = c.locks.get(cmd.name);
    // Re-acquiring a lock the session holds is not a new grant: same token.
    if (l !== undefined && s !== null && l.holder === s) {
      return { ok: true, kind: 'acquired', name: l.name, sessionId: s.id, fencingToken: l.token, ttlMs: s.ttlMs };
    }
    if (l === undefined || (l.holder === null && !l.inDelay)) {
      assert(l === undefined || l.waiterCount === 0, `free lock ${cmd.name} has waiters`);
      if (l === undefined && this.locksFull()) return { ok: false, code: 'too_many_requests', limit: 'locks' };
      s ??= this.createSession(cmd.sessionId, ns!.ttlMs, ns!.owner, ns!.lockDelayMs, ns!.principal ?? '', ev);
      const token = c.grant(c.lockFor(cmd.name), s, owner, index, ev, false);
      return { ok: true, kind: 'acquired', name: cmd.name, sessionId: s.id, fencingToken: token, ttlMs: s.ttlMs };
    }
    if (cmd.waitMs === 0) return lockHeld(l);
    const mine = s?.waits?.get(cmd.name);
    if (mine !== undefined) return { ok: true, kind: 'queued', name: cmd.name, sessionId: cmd.sessionId, position: positionOf(mine) };
    if (l.waiterCount >= c.limits.maxWaitersPerLock) return { ok: false, code: 'too_many_requests', limit: 'waiters' };
    if (this.locksFull()) return { ok: false, code: 'too_many_requests', limit: 'locks' };
    s ??= this.createSession(cmd.sessionId, ns!.ttlMs, ns!.owner, ns!.lockDelayMs, ns!.principal ?? '', ev);
    c.enqueue(l, s, owner, cmd.waitMs, index, key);
    return { ok: true, kind: 'queued', name: cmd.name, sessionId: s.id, position: l.waiterCount };
  }

  private release(index: number, cmd: Extract<Command, { kind: 'release' }>, ev: FsmEvent[]): ApplyResult {
    const c = this.core;
    const s = c.sessions.get(cmd.sessionId);
    if (s === undefined) return { ok: false, code: 'session_not_found' };
    const denied = this.refuseActor(cmd.sessionId, cmd.actor);
    if (denied) return denied;
    const l = c.locks.get(cmd.name);
    if (l === undefined || l.holder !== s) return { ok: false, code: 'not_holder' };
    if (cmd.fencingToken !== undefined && cmd.fencingToken !== l.token) return { ok: false, code: 'not_holder' };
    c.free(l, 0, index, ev);
    return { ok: true, kind: 'released', name: cmd.name };
  }

  private cancelWait(cmd: Extract<Command, { kind: 'cancelWait' }>, ev: FsmEvent[]): ApplyResult {
    const c = this.core;
    const s = c.sessions.get(cmd.sessionId);
    if (s === undefined) return { ok: false, code: 'session_not_found' };
    const w = s.waits?.get(cmd.name);
    if (w !== undefined && names(w.since, cmd.since)) {
      c.unlinkWaiter(w);
      c.maybeDrop(w.lock);
      ev.push({ type: 'waitEnded', name: cmd.name, sessionId: s.id, reason: 'cancelled' });
      return { ok: true, kind: 'wait_cancelled', name: cmd.name, sessionId: s.id };
    }
    // The grant may have won the race against the timeout: tell the proposer it holds it.
    const l = c.locks.get(cmd.name);
    if (l !== undefined && l.holder === s) return { ok: true, kind: 'acquired', name: l.name, sessionId: s.id, fencingToken: l.token, ttlMs: s.ttlMs };
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

  getLock(name: string): LockInfo {
    const l = this.core.locks.get(name);
    if (l === undefined) return { name, held: false, waiters: 0, inDelay: false };
    return lockInfo(l);
  }

  /** held locks whose name starts with prefix, sorted by name, at most limit */
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
    return l !== undefined && l.holder !== null && l.token === fencingToken;
  }

  /** every live session (for Lessor.promote) */
  *sessions(): Generator<{ sessionId: string; ttlMs: number }> {
    for (const s of this.core.sessions.values()) yield { sessionId: s.id, ttlMs: s.ttlMs };
  }

  /** locks in lock-delay, sorted by name; since: the delay's identity (0: unknown) */
  locksInDelay(): { name: string; delayMs: number; since: number }[] {
    return [...this.core.delayed].map((l) => ({ name: l.name, delayMs: l.delayMs, since: l.delaySince })).sort((a, b) => compareStrings(a.name, b.name));
  }

  /** every queued wait, in queue order per lock; since: the wait's identity (0: unknown) */
  *waits(): Generator<{ name: string; sessionId: string; waitMs: number; since: number }> {
    for (const l of this.core.locks.values()) {
      for (let w = l.head; w !== null; w = w.next) yield { name: l.name, sessionId: w.session.id, waitMs: w.waitMs, since: w.since };
    }
  }

  /** the session's current wait for `name`, if it waits (since: the wait's identity) */
  waitOf(name: string, sessionId: string): { waitMs: number; since: number } | undefined {
    const w = this.core.sessions.get(sessionId)?.waits?.get(name);
    return w === undefined ? undefined : { waitMs: w.waitMs, since: w.since };
  }

  counts(): FsmCounts {
    const c = this.core;
    return { sessions: c.sessions.size, heldLocks: c.held.size, waiters: c.waiterTotal, locksInDelay: c.delayed.size };
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

function lockHeld(l: LockState): ApplyResult {
  if (l.holder === null) return { ok: false, code: 'lock_held' }; // in lock-delay: nobody holds it
  return { ok: false, code: 'lock_held', holder: { sessionId: l.holder.id, owner: l.holderOwner, fencingToken: l.token } };
}

function lockInfo(l: LockState): LockInfo {
  if (l.holder === null) return { name: l.name, held: false, waiters: l.waiterCount, inDelay: l.inDelay };
  return { name: l.name, held: true, holder: { sessionId: l.holder.id, owner: l.holderOwner, fencingToken: l.token }, waiters: l.waiterCount, inDelay: false };
}

/** 1-based place in the queue. O(position) ≤ maxWaitersPerLock: only a repeated acquire
 *  by a session that already waits needs it. */
function positionOf(w: Waiter): number {
  let n = 1;
  for (let p = w.prev; p !== null; p = p.prev) n++;
  return n;
}
