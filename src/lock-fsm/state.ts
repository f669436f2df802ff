// The lock FSM's in-memory state and the primitive mutations every command is built from.
// Layout is chosen for a million sessions and a million held locks:
//  - a session's held locks form an intrusive doubly-linked list through the LockState
//    objects (no per-session Set: an idle session is one small object);
//  - a lock's FIFO queue is an intrusive doubly-linked list of Waiter nodes, and a
//    session finds its own waits through a lazily created Map, so removing a waiter from
//    the middle of a queue (cancel, session end) is O(1);
//  - held lock names are also kept in a SortedStringSet for ordered listing.
//  - shared holders of a lock (mode 'shared') are a Map on the LockState, and a session
//    finds its shares through a lazily created Map (docs/lock-fsm.md "Shared locks");
//  - semaphores live in semaphores.ts, beside the locks.
// A LockState exists only while the lock is held (in either mode), in lock-delay, or has waiters.

import { assertFsm as assert } from '../assert.js';
import { IdempotencyTable } from './idempotency.js';
import type { ApplyResult, FsmEvent } from './results.js';
import { SortedStringSet } from './sorted-set.js';
import { compareStrings } from './names.js';

export class Session {
  /** head of the intrusive list of locks this session holds (LockState.heldPrev/Next) */
  heldHead: LockState | null = null;
  heldCount = 0;
  /** lock name → this session's place in that lock's queue; null until it first waits */
  waits: Map<string, Waiter> | null = null;
  /** lock name → this session's shared grant of it; null while it holds no share */
  shares: Map<string, Share> | null = null;
  /** semaphore name → this session's permits; null while it holds none */
  sems: Map<string, SemHolder> | null = null;
  /** semaphore name → this session's place in its queue; null until it first waits */
  semWaits: Map<string, SemWaiter> | null = null;
  /** its waiting lock sets, in log order (lock-sets.ts); null while it has none */
  lockSets: LockSetWait[] | null = null;
  constructor(
    readonly id: string,
    readonly ttlMs: number,
    readonly owner: string,
    readonly lockDelayMs: number,
    /** the API token that opened it ('' when auth was off); immutable for its lifetime */
    readonly principal: string = '',
  ) {}
}

export class Waiter {
  prev: Waiter | null = null;
  next: Waiter | null = null;
  /** the lock set this place belongs to (docs/lock-fsm.md "Lock sets"); null for a single request */
  set: LockSetWait | null = null;
  /** scratch marks of the deadlock walks (deadlock.ts), not state */
  fwdMark = 0;
  backMark = 0;
  constructor(
    readonly lock: LockState,
    readonly session: Session,
    readonly owner: string,
    /** the wait_ms asked for; a new leader re-arms the wait with it (Lessor.promote) */
    readonly waitMs: number,
    /** the wait's identity: the log index of the entry that queued it (0: unknown, a
     *  wait restored from a snapshot written before waits had one). cancelWait names it. */
    readonly since: number,
    /** the Idempotency-Key of the acquire that queued it: when the wait is granted, the
     *  key's stored answer becomes the grant, so a retry gets the grant even after the
     *  lock moved on (docs/lock-fsm.md "Idempotency") */
    readonly key: string | undefined = undefined,
    /** asks for a shared grant (mode 'shared') */
    readonly shared = false,
    /** the acquire's max_hold_ms, given to the grant when it is made (0: none; set once
     *  more by snapshot import, which reads it from its own section) */
    public maxHoldMs = 0,
    /** a campaign's value (docs/lock-fsm.md "Elections"): the grant makes this session the
     *  election's leader with it. undefined for a plain acquire. Never with shared. (Not
     *  readonly: snapshot import sets it from the `elections` section.) */
    public value: string | undefined = undefined,
  ) {}
  /** the log time of the apply that queued it (FsmCore.idem.nowMs): a new leader's lessor
   *  ends the wait at queuedAtMs + waitMs in log time (Lessor.promote; docs/lock-fsm.md
   *  "The lessor (leader only)"), so a leader change never restarts its clock */
  queuedAtMs = 0;
}

// A lock set's record (the functions that change it: lock-sets.ts, docs/lock-fsm.md "Lock
// sets"). It stands here with the lock's and the session's, so that this file imports no
// module that imports it; FsmCore reaches the lock-set steps through LockSetSteps.
export class LockSetWait {
  /** one Waiter per name the set queued for, in the request's order */
  readonly members: Waiter[] = [];
  constructor(
    readonly session: Session,
    /** every name of the request, in its order (the answer's order) */
    readonly names: readonly string[],
    /** names the session held when the set queued (answered with their tokens), sorted */
    readonly held: readonly string[],
    readonly shared: boolean,
    /** the wait's identity: the log index of the acquireAll that queued it */
    readonly since: number,
    /** the acquireAll's Idempotency-Key: settled to the grant (docs/lock-fsm.md "Idempotency") */
    readonly key: string | undefined,
  ) {}
}

/**
 * A grant's maximum hold (docs/lock-fsm.md "Revocation and maximum hold"), the same for
 * every kind of grant (exclusive, shared, semaphore): maxHoldMs 0 means none. grantedAtMs
 * is the log time of the apply that made the grant (FsmCore.idem.nowMs): a new leader
 * arms the deadline from it (Lessor.promote), so a leader change never frees it early.
 */
export interface MaxHold {
  maxHoldMs: number;
  grantedAtMs: number;
}

/** one session's shared grant of a lock */
export class Share implements MaxHold {
  maxHoldMs = 0;
  grantedAtMs = 0;
  constructor(readonly lock: LockState, readonly session: Session, readonly owner: string, readonly token: number) {}
}

export class LockState {
  /** invariants: holder !== null ⇒ !inDelay and no shares; a queue is never grantable
   *  at its head (pump grants what can be granted in the same apply) */
  holder: Session | null = null;
  /** shared holders by session id; null while there are none. May coexist with
   *  lock-delay (a share freed by expiry starts one while other shares stay held). */
  shares: Map<string, Share> | null = null;
  holderOwner = '';
  /** the leader's value while the exclusive grant is an election's (a campaign won:
   *  docs/lock-fsm.md "Elections"); null for a plain grant and while not held */
  value: string | null = null;
  /** the current grant's fencing token (0 when not held) */
  token = 0;
  /** the exclusive grant's max hold (MaxHold; 0 when none or not held) */
  maxHoldMs = 0;
  grantedAtMs = 0;
  heldPrev: LockState | null = null;
  heldNext: LockState | null = null;
  /** Chubby lock-delay: freed by an expiry, unavailable until endLockDelay */
  inDelay = false;
  delayMs = 0;
  /** the current delay's identity: the log index of the entry that started it (0: not in
   *  delay, or a delay restored from a snapshot written before delays had one) */
  delaySince = 0;
  head: Waiter | null = null;
  tail: Waiter | null = null;
  waiterCount = 0;
  constructor(readonly name: string) {}
}

// A semaphore's records (the functions that change them: semaphores.ts, docs/lock-fsm.md
// "Semaphores"). They stand here with the lock's, so that this file imports no module
// that imports it.
export class SemHolder implements MaxHold {
  maxHoldMs = 0;
  grantedAtMs = 0;
  constructor(readonly sem: SemState, readonly session: Session, readonly owner: string, readonly permits: number, readonly token: number) {}
}

export class SemWaiter {
  constructor(
    readonly sem: SemState,
    readonly session: Session,
    readonly owner: string,
    readonly permits: number,
    readonly waitMs: number,
    /** the wait's identity: the log index that queued it (semCancelWait names it) */
    readonly since: number,
    /** the Idempotency-Key of the acquire that queued it (settled to the grant) */
    readonly key: string | undefined,
    /** the acquire's max_hold_ms, given to the grant (0: none; see Waiter.maxHoldMs) */
    public maxHoldMs = 0,
  ) {}
  /** the log time of the apply that queued it (see Waiter.queuedAtMs) */
  queuedAtMs = 0;
}

export class SemState {
  inUse = 0;
  /** holders by session id */
  readonly holders = new Map<string, SemHolder>();
  readonly queue: SemWaiter[] = [];
  constructor(readonly name: string, public limit: number) {}
}

export interface LockFsmOptions {
  /** api.md limits.max_sessions (default 1000000) */
  maxSessions?: number;
  /** api.md limits.max_waiters_per_lock (default 1000) */
  maxWaitersPerLock?: number;
  /** api.md limits.max_sessions_per_token: live sessions per principal (default: no limit) */
  maxSessionsPerPrincipal?: number;
  /** limits.max_locks: lock entries (held or in lock-delay) plus queued waits, the FSM's
   *  memory bound next to max_sessions (default: no limit) */
  maxLocks?: number;
  /** how long an Idempotency-Key is remembered, in log time; >= 600000 (default 600000) */
  idempotencyTtlMs?: number;
  /** bound on remembered keys; the oldest go first past it (default 500000) */
  idempotencyMaxKeys?: number;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): expireHold ends the
   *  session's current grant of the name whatever token it names */
  testExpireHoldIgnoresToken?: boolean;
  /** TEST ONLY (docs/jepsen-lite.md "Does it bite?"): a reused Idempotency-Key gets its
   *  first answer whatever the request (IdempotencyTable.testReplayReusedKeys) */
  testIdemUnbound?: boolean;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): no wait is refused as
   *  `deadlock` (docs/lock-fsm.md "Deadlock detection" switched off) */
  testNoDeadlockDetection?: boolean;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): a hold that ends withdraws
   *  its session's waiting sets before the lock-delay starts (the order before the fix) */
  testWithdrawSetsBeforeDelay?: boolean;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): waits that end together
   *  (a withdrawal, a releaseAll) end one at a time, each serving its queues before the
   *  next ends (the order before the fix; lock-sets.ts endWaits) */
  testEndWaitsOneByOne?: boolean;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): a wait that ends without a
   *  grant leaves its key's stored answer 'queued' (IdempotencyTable.testKeepQueuedAnswers) */
  testKeepQueuedAnswers?: boolean;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): an acquire joins its
   *  session's wait for the name whatever its mode (the rule before the fix: fsm.ts acquire) */
  testJoinAnyWait?: boolean;
}

/** An empty state. Options are cluster configuration, not state: every replica must use
 *  the same values, or their applies (limits) would diverge. */
export function newCore(o: LockFsmOptions, sets: LockSetSteps): FsmCore {
  const maxSessions = o.maxSessions ?? 1_000_000;
  const maxWaitersPerLock = o.maxWaitersPerLock ?? 1000;
  if (!Number.isSafeInteger(maxSessions) || maxSessions < 1) throw new Error(`maxSessions must be a positive integer, got ${maxSessions}`);
  if (!Number.isSafeInteger(maxWaitersPerLock) || maxWaitersPerLock < 1) throw new Error(`maxWaitersPerLock must be a positive integer, got ${maxWaitersPerLock}`);
  const maxSessionsPerPrincipal = o.maxSessionsPerPrincipal ?? Number.MAX_SAFE_INTEGER;
  const maxLocks = o.maxLocks ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isSafeInteger(maxSessionsPerPrincipal) || maxSessionsPerPrincipal < 1) throw new Error(`maxSessionsPerPrincipal must be a positive integer, got ${maxSessionsPerPrincipal}`);
  if (!Number.isSafeInteger(maxLocks) || maxLocks < 1) throw new Error(`maxLocks must be a positive integer, got ${maxLocks}`);
  const idem = new IdempotencyTable(o.idempotencyTtlMs ?? 600_000, o.idempotencyMaxKeys ?? 500_000);
  if (o.testIdemUnbound === true) idem.testReplayReusedKeys = true;
  if (o.testKeepQueuedAnswers === true) idem.testKeepQueuedAnswers = true;
  const core = new FsmCore({ maxSessions, maxWaitersPerLock, maxSessionsPerPrincipal, maxLocks }, idem, sets);
  core.testNoDeadlockDetection = o.testNoDeadlockDetection === true;
  core.testWithdrawSetsBeforeDelay = o.testWithdrawSetsBeforeDelay === true;
  core.testEndWaitsOneByOne = o.testEndWaitsOneByOne === true;
  core.testJoinAnyWait = o.testJoinAnyWait === true;
  return core;
}

/** what FsmCore calls on lock sets (lock-sets.ts LOCK_SET_STEPS): a grant pass reaching a
 *  set's place at the head of a queue, and a session losing a name a waiting set holds */
export interface LockSetSteps {
  grantIfReady(c: FsmCore, set: LockSetWait, index: number, ev: FsmEvent[], work: LockState[]): boolean;
  withdrawHolding(c: FsmCore, s: Session, name: string, index: number, ev: FsmEvent[]): void;
}

export interface FsmLimits {
  maxSessions: number;
  maxWaitersPerLock: number;
  maxSessionsPerPrincipal: number;
  maxLocks: number;
}

export class FsmCore {
  readonly sessions = new Map<string, Session>();
  readonly locks = new Map<string, LockState>();
  /** names of locks with a holder, ordered */
  readonly held = new SortedStringSet();
  readonly delayed = new Set<LockState>();
  /** waiting lock sets (lock-sets.ts) */
  readonly lockSets = new Set<LockSetWait>();
  /** semaphores with holders or waiters (semaphores.ts) */
  readonly sems = new Map<string, SemState>();
  semWaiterTotal = 0;
  /** permits held over all semaphores (raftlock_semaphores_in_use) */
  semInUse = 0;
  /** live sessions per non-empty principal (for max_sessions_per_token); derived state,
   *  rebuilt on snapshot import, never serialized */
  readonly perPrincipal = new Map<string, number>();
  waiterTotal = 0;
  /** locks held by a campaign's grant (LockState.value !== null): elections with a leader */
  electionLeaders = 0;
  /** fencing-token counter: every grant takes max(index, lastToken + 1) */
  lastToken = 0;
  lastApplied = 0;
  /** TEST ONLY: LockFsmOptions.testNoDeadlockDetection */
  testNoDeadlockDetection = false;
  /** TEST ONLY: LockFsmOptions.testJoinAnyWait */
  testJoinAnyWait = false;
  /** TEST ONLY: LockFsmOptions.testWithdrawSetsBeforeDelay */
  testWithdrawSetsBeforeDelay = false;
  /** TEST ONLY: LockFsmOptions.testEndWaitsOneByOne */
  testEndWaitsOneByOne = false;

  constructor(
    readonly limits: FsmLimits,
    readonly idem: IdempotencyTable,
    /** the lock-set steps (lock-sets.ts LOCK_SET_STEPS); injected, not imported */
    private readonly sets: LockSetSteps,
  ) {}

  /** Next fencing token. Strictly above every earlier token and never below the entry's
   *  index, so tokens stay comparable with log positions (api.md §3 "Fencing tokens"). */
  nextToken(index: number): number {
    const t = Math.max(index, this.lastToken + 1);
    assert(Number.isSafeInteger(t), 'fencing token overflow');
    this.lastToken = t;
    return t;
  }

  lockFor(name: string): LockState {
    let l = this.locks.get(name);
    if (l === undefined) {
      l = new LockState(name);
      this.locks.set(name, l);
    }
    return l;
  }

  /** registers a live session (apply and snapshot import alike) */
  addSession(s: Session): void {
    this.sessions.set(s.id, s);
    if (s.principal !== '') this.perPrincipal.set(s.principal, (this.perPrincipal.get(s.principal) ?? 0) + 1);
  }

  removeSession(s: Session): void {
    this.sessions.delete(s.id);
    if (s.principal === '') return;
    const n = (this.perPrincipal.get(s.principal) ?? 0) - 1;
    assert(n >= 0, `principal ${s.principal} session count below zero`);
    if (n === 0) this.perPrincipal.delete(s.principal);
    else this.perPrincipal.set(s.principal, n);
  }

  /** drops a lock entry that no longer carries state */
  maybeDrop(l: LockState): void {
    if (l.holder === null && l.shares === null && !l.inDelay && l.waiterCount === 0) this.locks.delete(l.name);
  }

  /** keeps the sorted index of held names in step with the lock (held in either mode) */
  reindex(l: LockState): void {
    const held = l.holder !== null || l.shares !== null;
    if (held !== this.held.has(l.name)) {
      if (held) this.held.add(l.name);
      else this.held.delete(l.name);
    }
  }

  /** can a new request of this mode be granted at once (nobody queued before it)? */
  grantable(l: LockState, shared: boolean): boolean {
    return l.holder === null && !l.inDelay && l.head === null && (shared || l.shares === null);
  }

  /** Grants the lock exclusively; the caller has checked it is free. maxHoldMs: the
   *  acquire's max_hold_ms (0: none), carried on the `granted` event for the lessor.
   *  value: a campaign's (the grant makes s the election's leader), undefined for a plain acquire. */
  grant(l: LockState, s: Session, owner: string, index: number, events: FsmEvent[], maxHoldMs = 0, value?: string): number {
    assert(l.holder === null && l.shares === null && !l.inDelay, `grant of ${l.name} while held or delayed`);
    assert(this.sessions.get(s.id) === s, `grant of ${l.name} to dead session ${s.id}`);
    const token = this.nextToken(index);
    this.attachHolder(l, s, owner, token, true);
    this.setMaxHold(l, maxHoldMs);
    this.reindex(l);
    const e: Extract<FsmEvent, { type: 'granted' }> = { type: 'granted', name: l.name, sessionId: s.id, fencingToken: token };
    if (maxHoldMs > 0) e.maxHoldMs = maxHoldMs;
    if (value !== undefined) {
      this.setLeaderValue(l, value);
      e.value = value;
    }
    events.push(e);
    return token;
  }

  /** Grants a share; the caller has checked no exclusive holder or delay is in the way. */
  grantShare(l: LockState, s: Session, owner: string, index: number, events: FsmEvent[], maxHoldMs = 0): number {
    assert(l.holder === null && !l.inDelay, `shared grant of ${l.name} while held exclusively or delayed`);
    assert(this.sessions.get(s.id) === s, `grant of ${l.name} to dead session ${s.id}`);
    const token = this.nextToken(index);
    const sh = this.attachShare(l, s, owner, token);
    this.setMaxHold(sh, maxHoldMs);
    this.reindex(l);
    events.push(maxHoldMs > 0 ? { type: 'granted', name: l.name, sessionId: s.id, fencingToken: token, mode: 'shared', maxHoldMs } : { type: 'granted', name: l.name, sessionId: s.id, fencingToken: token, mode: 'shared' });
    return token;
  }

  /** gives a grant made by this apply its max hold, from the applied log time */
  setMaxHold(g: MaxHold, maxHoldMs: number): void {
    g.maxHoldMs = maxHoldMs;
    g.grantedAtMs = maxHoldMs > 0 ? this.idem.nowMs : 0;
  }

  /** links a holder in (also used by snapshot restore, which brings its own tokens);
   *  indexed: leave the sorted index alone (the caller reindexes) */
  attachHolder(l: LockState, s: Session, owner: string, token: number, indexed: boolean): void {
    l.holder = s;
    l.holderOwner = owner;
    l.token = token;
    l.heldPrev = null;
    l.heldNext = s.heldHead;
    if (s.heldHead !== null) s.heldHead.heldPrev = l;
    s.heldHead = l;
    s.heldCount++;
    if (!indexed) this.held.add(l.name);
  }

  /** makes the exclusive grant an election's, with this value (grant, snapshot restore) */
  setLeaderValue(l: LockState, value: string): void {
    assert(l.holder !== null && l.value === null, `election value on ${l.name} without a fresh exclusive grant`);
    l.value = value;
    this.electionLeaders++;
  }

  attachShare(l: LockState, s: Session, owner: string, token: number): Share {
    const sh = new Share(l, s, owner, token);
    (l.shares ??= new Map()).set(s.id, sh);
    (s.shares ??= new Map()).set(l.name, sh);
    return sh;
  }

  /** puts a lock into lock-delay without an event (snapshot restore) */
  setDelay(l: LockState, delayMs: number, since: number): void {
    l.inDelay = true;
    l.delayMs = delayMs;
    l.delaySince = since;
    this.delayed.add(l);
  }

  /** Frees the exclusive holder: lock-delay when delayMs > 0 (expiry), else the queue's
   *  head is served in the same apply, else the lock entry disappears. */
  free(l: LockState, delayMs: number, index: number, events: FsmEvent[]): void {
    const s = l.holder;
    assert(s !== null, `free of unheld lock ${l.name}`);
    if (l.heldPrev !== null) l.heldPrev.heldNext = l.heldNext;
    else s.heldHead = l.heldNext;
    if (l.heldNext !== null) l.heldNext.heldPrev = l.heldPrev;
    l.heldPrev = l.heldNext = null;
    s.heldCount--;
    l.holder = null;
    l.holderOwner = '';
    l.token = 0;
    l.maxHoldMs = 0;
    l.grantedAtMs = 0;
    if (l.value !== null) this.electionLeaders--;
    l.value = null;
    this.afterFree(l, s, delayMs, index, events);
  }

  /** Frees one session's share, as free() does for an exclusive holder. */
  freeShare(l: LockState, s: Session, delayMs: number, index: number, events: FsmEvent[]): void {
    const sh = l.shares?.get(s.id);
    assert(sh !== undefined, `free of a share of ${l.name} that ${s.id} does not hold`);
    const shares = l.shares as Map<string, Share>;
    shares.delete(s.id);
    if (shares.size === 0) l.shares = null;
    const mine = s.shares as Map<string, Share>;
    mine.delete(l.name);
    if (mine.size === 0) s.shares = null;
    this.afterFree(l, s, delayMs, index, events);
  }

  /** After `s` lost its grant of `l`: the lock-delay starts first, so that withdrawing the
   *  sets of `s` that counted on `l` — which serves their other queues, and can grant
   *  another session's set that includes `l` — finds `l` delayed (sim-lock seed 181 granted
   *  a set through a lock an instant before its delay began). Without a delay, `l`'s own
   *  queue is served last. */
  private afterFree(l: LockState, s: Session, delayMs: number, index: number, events: FsmEvent[]): void {
    if (this.testWithdrawSetsBeforeDelay && s.lockSets !== null) this.sets.withdrawHolding(this, s, l.name, index, events);
    if (delayMs > 0) {
      // a later expiry during a delay (another share's) restarts it, never shortens it
      this.setDelay(l, l.inDelay ? Math.max(l.delayMs, delayMs) : delayMs, index);
      events.push({ type: 'lockDelayStarted', name: l.name, delayMs: l.delayMs, since: index });
      this.reindex(l);
    }
    if (s.lockSets !== null) this.sets.withdrawHolding(this, s, l.name, index, events);
    if (delayMs === 0) this.pump(l, index, events);
  }

  /** Ends a lock-delay: the queue's head is served. */
  endDelay(l: LockState, index: number, events: FsmEvent[]): void {
    assert(l.inDelay && l.holder === null, `endDelay of ${l.name} not in delay`);
    l.inDelay = false;
    l.delayMs = 0;
    l.delaySince = 0;
    this.delayed.delete(l);
    events.push({ type: 'lockDelayEnded', name: l.name });
    this.pump(l, index, events);
  }

  /** Grants what the queue's head allows: one exclusive request once the lock is free,
   *  or every shared request at the head together (each its own token, in queue order)
   *  while no exclusive holder or delay is in the way; a lock set at the head once all of
   *  its places are at their heads (lock-sets.ts). Then reindexes, and drops an entry that
   *  carries nothing. Called after every change that can unblock the head. A set's grant
   *  moves the queues of its other names too: they are served in the same call, from a
   *  work list rather than by recursion (a chain of shared sets could be long). */
  pump(first: LockState, index: number, events: FsmEvent[]): void {
    // the work list exists only once a set was granted (most pumps grant none)
    const work = this.pumpOne(first, index, events, null);
    for (let i = 0; work !== null && i < work.length; i++) this.pumpOne(work[i] as LockState, index, events, work);
  }

  private pumpOne(l: LockState, index: number, events: FsmEvent[], work: LockState[] | null): LockState[] | null {
    while (l.head !== null && l.holder === null && !l.inDelay) {
      const w = l.head;
      if (w.set !== null) {
        work ??= [];
        if (!this.sets.grantIfReady(this, w.set, index, events, work)) break;
        continue;
      }
      if (!w.shared && l.shares !== null) break;
      this.unlinkWaiter(w);
      if (w.shared) {
        const token = this.grantShare(l, w.session, w.owner, index, events, w.maxHoldMs);
        this.idem.settle('queued', w.session.id, l.name, () => ({ ok: true, kind: 'acquired', name: l.name, sessionId: w.session.id, fencingToken: token, ttlMs: w.session.ttlMs, mode: 'shared' }));
      } else {
        const token = this.grant(l, w.session, w.owner, index, events, w.maxHoldMs, w.value);
        this.idem.settle('queued', w.session.id, l.name, () => {
          const won: Extract<ApplyResult, { kind: 'acquired' }> = { ok: true, kind: 'acquired', name: l.name, sessionId: w.session.id, fencingToken: token, ttlMs: w.session.ttlMs };
          if (w.value !== undefined) won.value = w.value;
          return won;
        });
        break;
      }
    }
    this.reindex(l);
    this.maybeDrop(l);
    return work;
  }

  enqueue(l: LockState, s: Session, owner: string, waitMs: number, since: number, key?: string, shared = false, maxHoldMs = 0, value?: string): Waiter {
    const w = new Waiter(l, s, owner, waitMs, since, key, shared, maxHoldMs, value);
    w.queuedAtMs = this.idem.nowMs;
    w.prev = l.tail;
    if (l.tail !== null) l.tail.next = w;
    else l.head = w;
    l.tail = w;
    l.waiterCount++;
    this.waiterTotal++;
    if (s.waits === null) s.waits = new Map();
    s.waits.set(l.name, w);
    return w;
  }

  /** A single request's wait ends without a grant (a set's places end in lock-sets.ts
   *  endWaits): it leaves its queue, and its key's stored 'queued' answer becomes what the
   *  waiting request was told — lock_held as the lock stands now, or session_not_found
   *  (IdempotencyTable.endWait). The caller serves the queue (pump) and emits waitEnded. */
  endWait(w: Waiter, reason: 'cancelled' | 'session_ended'): void {
    this.unlinkWaiter(w);
    this.idem.endWait('queued', w.session.id, w.lock.name, () => (reason === 'session_ended' ? { ok: false, code: 'session_not_found' } : lockHeld(w.lock)));
  }

  /** O(1) removal from anywhere in the queue; does not drop the lock entry */
  unlinkWaiter(w: Waiter): void {
    const l = w.lock;
    if (w.prev !== null) w.prev.next = w.next;
    else l.head = w.next;
    if (w.next !== null) w.next.prev = w.prev;
    else l.tail = w.prev;
    w.prev = w.next = null;
    l.waiterCount--;
    this.waiterTotal--;
    const waits = w.session.waits as Map<string, Waiter>;
    waits.delete(l.name);
    if (waits.size === 0) w.session.waits = null;
  }

  /** held lock names of a session, sorted: every multi-lock step walks them in this
   *  order, so the tokens it hands out do not depend on how the list was built */
  heldNames(s: Session): string[] {
    const out: string[] = [];
    for (let l = s.heldHead; l !== null; l = l.heldNext) out.push(l.name);
    if (s.shares !== null) for (const name of s.shares.keys()) out.push(name);
    return out.sort(compareStrings);
  }
}

/** Invariant violations are bugs: fail loudly (TigerStyle), never return a value. The
 *  one assertion module is the core's (src/raft/core/assert.ts); the FSM's modules import
 *  it from here. */
export { assert };

/** the lock_held refusal as the lock stands: its exclusive holder (and an election's value),
 *  or nobody (in lock-delay, or shared) */
export function lockHeld(l: LockState): ApplyResult {
  if (l.holder === null) return { ok: false, code: 'lock_held' };
  const holder = { sessionId: l.holder.id, owner: l.holderOwner, fencingToken: l.token };
  return l.value === null ? { ok: false, code: 'lock_held', holder } : { ok: false, code: 'lock_held', holder, value: l.value };
}
