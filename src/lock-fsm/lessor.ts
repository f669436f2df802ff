// The lessor: leader-only bookkeeping of time (after etcd server/lease/lessor.go:
// Promote / Demote / Renew). It never changes lock state itself: it turns deadlines into
// commands (expireSession, endLockDelay, cancelWait) that the leader proposes through the
// log (docs/architecture.md "Rules", rule 3), so every replica agrees on what expired.
//
// Guarantees it provides (api.md §3 "TTL semantics"):
//  - never early: a deadline only moves later (renew takes the max), and promote() gives
//    every session a full TTL from the moment the new leader took office;
//  - never late: due(now) reports everything whose deadline is <= now, so a driver
//    calling it every tickMs proposes an expiry within one tick of its deadline;
//  - a follower tracks nothing and proposes nothing (demote forgets everything).
// Each command is reported once, then again every retryMs until an apply shows it done
// (a proposal can be dropped, e.g. during a leadership transfer; the proposer holds a
// repeat back while an earlier copy can still commit: src/server/leader/lessor-proposer.ts). So
// several copies of a command can be in the log at once: endLockDelay and cancelWait
// therefore name the delay or wait they end by the log index at which it began (`since`),
// and a copy that lands after its item is over does nothing (docs/lock-fsm.md "Lessor
// commands name what they end").
//
// Waits (docs/lock-fsm.md "The lessor (leader only)"): every committed wait ends by its
// wait_ms, whichever node proposed it and however many leaders came between. The lessor
// learns of a wait from the log (the `waiting` / `semWaiting` event of the apply that
// queued it; a campaign's wait is a lock wait) or, on taking office, from the state, and
// arms it in log time: queuedAtMs + waitMs, counted from now as what log time has not yet
// spent of it. The API layer's trackWait then brings that bound forward to the request's
// arrival + the wait's waitMs (exact for the request that queued it) and extends it to
// arrival + the request's own wait_ms (a later request asks for more). Its cancel is
// re-proposed until an apply ends the wait or the wait is gone (due's `waitLive`), never
// given up after a few tries.
//
// Each tracked item has exactly one heap entry. A renewal does not touch the heap: when
// the entry comes due, the item is re-pushed at its current deadline (lazy update), so a
// keepalive costs O(1) and a due item O(log n).

import type { Command } from './commands.js';
import { DeadlineHeap } from './deadline-heap.js';
import type { FsmEvent, GrantKind } from './results.js';

/** What promote() reads from the state machine (LockFsm implements it). */
export interface LessorSource {
  sessions(): Iterable<{ sessionId: string; ttlMs: number }>;
  locksInDelay(): Iterable<{ name: string; delayMs: number; since: number }>;
  /** queuedAtMs: the log time the wait was queued at (LockFsm.waits); absent: unknown, the
   *  wait gets its full waitMs from now */
  waits(): Iterable<{ name: string; sessionId: string; waitMs: number; since: number; queuedAtMs?: number; semaphore?: true }>;
  /** grants with a max hold, and the log time of the applied state (LockFsm); optional so
   *  a source without max holds need not say so */
  grantsWithMaxHold?(): Iterable<{ target: GrantKind; name: string; sessionId: string; fencingToken: number; maxHoldMs: number; grantedAtMs: number }>;
  readonly logTimeMs?: number;
}

/** does this grant still stand (LockFsm.holdsGrant)? due() drops a max-hold deadline of a
 *  grant that ended otherwise (released, or its session closed) without proposing */
export type GrantLive = (target: GrantKind, name: string, sessionId: string, fencingToken: number) => boolean;

/** does this wait still stand (LockFsm.waitStands; since 0: any wait of the session on
 *  the name)? due() drops a wait that ended unseen instead of cancelling it for ever */
export type WaitLive = (target: GrantKind, name: string, sessionId: string, since: number) => boolean;

/** what observe() reads to arm a wait it learns of from the log (LockFsm implements it) */
export interface WaitSource {
  waitOf(name: string, sessionId: string): WaitInfoLike | undefined;
  semWaitOf(name: string, sessionId: string): WaitInfoLike | undefined;
  /** the log time of the applied state */
  readonly logTimeMs: number;
}

interface WaitInfoLike { waitMs: number; since: number; queuedAtMs: number }

export interface LessorOptions {
  /** how often the driver calls due(); used as the default retry unit (default 100) */
  tickMs?: number;
  /** re-propose a due command not yet seen applied after this long (default 20 ticks) */
  retryMs?: number;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): propose these commands
   *  without `since`, as versions before they named their item did */
  legacyCommands?: readonly ('endLockDelay' | 'cancelWait')[];
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): a new leader arms every
   *  max hold a full maxHoldMs from now, forgetting the log time that already passed */
  testRearmFullMaxHold?: boolean;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): track waits as versions
   *  before log-time waits did: only those the API layer queued on this leader
   *  (trackWait) or that were applied when it took office (re-armed with the full waitMs),
   *  none learned from the log, and each cancel given up after three proposals */
  testLegacyWaitTracking?: boolean;
}

type Track =
  | { kind: 'session'; sessionId: string; ttlMs: number; deadlineMs: number; proposedAtMs: number; dead: boolean }
  | { kind: 'delay'; name: string; since: number; deadlineMs: number; proposedAtMs: number; dead: boolean }
  /** fromLog: armed from the log's queue time (observe, promote); false once the API layer
   *  tracked it with the request's arrival (trackWait) */
  | { kind: 'wait'; name: string; sessionId: string; since: number; deadlineMs: number; proposedAtMs: number; dead: boolean; attempts: number; semaphore: boolean; fromLog: boolean; waitMs: number }
  /** a grant's max hold (docs/lock-fsm.md "Revocation and maximum hold") */
  | { kind: 'hold'; target: GrantKind; name: string; sessionId: string; token: number; deadlineMs: number; proposedAtMs: number; dead: boolean };

const NOT_PROPOSED = -1;
/** the testLegacyWaitTracking mutation's cap on a cancel's proposals */
const LEGACY_WAIT_ATTEMPTS = 3;

/** a grant's max-hold track: one per (kind, name, session), so a later grant replaces it */
function holdKey(target: GrantKind, name: string, sessionId: string): string {
  return `${target === 'semaphore' ? 's' : 'l'}${name}\u0000${sessionId}`;
}

/** a lock and a semaphore may share a name: their waits are told apart by the prefix */
function waitKey(name: string, sessionId: string, semaphore = false): string {
  return `${semaphore ? 's' : 'l'}${name}\u0000${sessionId}`; // neither a lock name nor a session id holds NUL
}

export class Lessor {
  readonly tickMs: number;
  readonly retryMs: number;
  private readonly legacy: readonly string[];
  private readonly rearmFullMaxHold: boolean;
  private readonly legacyWaits: boolean;
  private leader = false;
  private readonly sessionTracks = new Map<string, Track & { kind: 'session' }>();
  private readonly delayTracks = new Map<string, Track & { kind: 'delay' }>();
  private readonly waitTracks = new Map<string, Track & { kind: 'wait' }>();
  private readonly holdTracks = new Map<string, Track & { kind: 'hold' }>();
  /** session id → its hold keys, so a session's end forgets them all at once */
  private readonly holdsBySession = new Map<string, Set<string>>();
  private readonly heap = new DeadlineHeap<Track>();

  constructor(opts: LessorOptions = {}) {
    this.tickMs = opts.tickMs ?? 100;
    this.retryMs = opts.retryMs ?? 20 * this.tickMs;
    this.legacy = opts.legacyCommands ?? [];
    this.rearmFullMaxHold = opts.testRearmFullMaxHold === true;
    this.legacyWaits = opts.testLegacyWaitTracking === true;
    if (!(this.tickMs > 0) || !(this.retryMs > 0)) throw new Error('Lessor: tickMs and retryMs must be positive');
  }

  get isLeader(): boolean {
    return this.leader;
  }

  /** Takes office: every session gets a full TTL from now, every lock-delay its full delay
   *  (the old leader's clocks are not trusted, only extended), every wait and max hold
   *  what log time has not yet spent of it. */
  promote(nowMs: number, src: LessorSource): void {
    this.clear();
    this.leader = true;
    const armed: { atMs: number; value: Track }[] = [];
    for (const s of src.sessions()) {
      const t = { kind: 'session' as const, sessionId: s.sessionId, ttlMs: s.ttlMs, deadlineMs: nowMs + s.ttlMs, proposedAtMs: NOT_PROPOSED, dead: false };
      this.sessionTracks.set(s.sessionId, t);
      armed.push({ atMs: t.deadlineMs, value: t });
    }
    this.heap.pushAll(armed);
    for (const d of src.locksInDelay()) this.trackDelay(d.name, d.since, nowMs + d.delayMs);
    // A max hold ends grantedAtMs + maxHoldMs in LOG time, and a wait queuedAtMs + waitMs.
    // Log time runs no faster than real time (docs/lock-fsm.md "Log time"), so the log time
    // that passed since the grant (the queueing) is at most the real time that did: arming
    // the rest from now never frees a grant before max_hold_ms of real time after it was
    // made, nor ends a wait before wait_ms after its request. It may be later, by what log
    // time lost (elections, idle gaps), never by more than max_hold_ms (wait_ms).
    const logNow = src.logTimeMs ?? 0;
    for (const w of src.waits()) {
      if (this.legacyWaits || w.queuedAtMs === undefined) this.trackWait(w.name, w.sessionId, nowMs + w.waitMs, w.since, w.semaphore === true);
      else this.trackLogWait(w.name, w.sessionId, w as WaitInfoLike, logNow, nowMs, w.semaphore === true);
    }
    for (const h of src.grantsWithMaxHold?.() ?? []) {
      const left = this.rearmFullMaxHold ? h.maxHoldMs : Math.max(0, Math.min(h.maxHoldMs, h.grantedAtMs + h.maxHoldMs - logNow));
      this.trackHold(h.target, h.name, h.sessionId, h.fencingToken, nowMs + left);
    }
  }

  /** Leaves office: forget everything; a follower never expires anything. */
  demote(): void {
    this.clear();
    this.leader = false;
  }

  private clear(): void {
    for (const t of this.sessionTracks.values()) t.dead = true;
    for (const t of this.delayTracks.values()) t.dead = true;
    for (const t of this.waitTracks.values()) t.dead = true;
    for (const t of this.holdTracks.values()) t.dead = true;
    this.sessionTracks.clear();
    this.delayTracks.clear();
    this.waitTracks.clear();
    this.holdTracks.clear();
    this.holdsBySession.clear();
    this.heap.clear();
  }

  /**
   * A keepalive/renew/acquire the client sent at sentAtMs (use the arrival time: it is
   * never before the send). Returns false — the caller must answer session_not_found —
   * when this node does not lead, the session is unknown, or its expiry is already
   * proposed (that entry will very likely commit, so the renewal cannot be honoured).
   */
  renew(sessionId: string, sentAtMs: number): boolean {
    const t = this.sessionTracks.get(sessionId);
    if (!this.leader || t === undefined || t.proposedAtMs !== NOT_PROPOSED) return false;
    t.deadlineMs = Math.max(t.deadlineMs, sentAtMs + t.ttlMs);
    return true;
  }

  /** The session's current expiry deadline on this leader (undefined if untracked). */
  deadlineOf(sessionId: string): number | undefined {
    return this.sessionTracks.get(sessionId)?.deadlineMs;
  }

  /** The API layer waits for the grant of a request that arrived at `arrivalMs` with
   *  wait_ms w: deadline arrival + w. since: the wait's identity in the FSM
   *  (LockFsm.waitOf). The first such request brings the bound armed from the log forward
   *  to its arrival + the wait's own waitMs (the request that queued the wait arrived no
   *  later than any other that finds it, so this is never early, and exact for that one);
   *  every request extends the deadline to its own arrival + w (a retry, or a later
   *  acquire of the same session, asks to wait that long); one for a newer wait of the
   *  same session replaces it. */
  trackWait(name: string, sessionId: string, deadlineMs: number, since: number, semaphore = false, arrivalMs?: number): void {
    if (!this.leader) return;
    const k = waitKey(name, sessionId, semaphore);
    const t = this.waitTracks.get(k);
    if (t !== undefined && t.since === since) {
      const from = t.fromLog && arrivalMs !== undefined ? Math.min(t.deadlineMs, arrivalMs + t.waitMs) : t.deadlineMs;
      const d = Math.max(from, deadlineMs);
      if (d < t.deadlineMs) this.newWaitTrack(k, name, sessionId, since, d, semaphore, false, t.waitMs);
      else {
        t.deadlineMs = d;
        t.fromLog = false;
      }
      return;
    }
    this.newWaitTrack(k, name, sessionId, since, deadlineMs, semaphore, false, 0);
  }

  /** The API layer's client went away: its wait is given up now. The cancel is proposed
   *  (and re-proposed) as any due one, until an apply shows the wait's end. */
  endWaitNow(name: string, sessionId: string, since: number, nowMs: number, semaphore = false): void {
    if (!this.leader) return;
    this.newWaitTrack(waitKey(name, sessionId, semaphore), name, sessionId, since, nowMs, semaphore, false, 0);
  }

  /** a wait learned from the log (its apply, or the state on taking office): it ends at
   *  queuedAtMs + waitMs in log time, of which logNow − queuedAtMs is spent. A wait the API
   *  layer already tracks keeps that deadline. */
  private trackLogWait(name: string, sessionId: string, w: WaitInfoLike, logNow: number, nowMs: number, semaphore: boolean): void {
    const k = waitKey(name, sessionId, semaphore);
    if (this.waitTracks.get(k)?.since === w.since) return;
    const left = Math.max(0, Math.min(w.waitMs, w.queuedAtMs + w.waitMs - logNow));
    this.newWaitTrack(k, name, sessionId, w.since, nowMs + left, semaphore, true, w.waitMs);
  }

  /** (re)places the wait's track: a fresh object, so a deadline may also move earlier (the
   *  old heap entry is discarded as dead when it surfaces) */
  private newWaitTrack(k: string, name: string, sessionId: string, since: number, deadlineMs: number, semaphore: boolean, fromLog: boolean, waitMs: number): void {
    this.untrack(this.waitTracks, k);
    const nt = { kind: 'wait' as const, name, sessionId, since, deadlineMs, proposedAtMs: NOT_PROPOSED, dead: false, attempts: 0, semaphore, fromLog, waitMs };
    this.waitTracks.set(k, nt);
    this.heap.push(deadlineMs, nt);
  }

  /** Feeds the events of every apply (in log order) on the leader, right after that apply.
   *  src: the state after it, to arm the waits it queued (without it, they are not armed). */
  observe(events: readonly FsmEvent[], nowMs: number, src?: WaitSource): void {
    if (!this.leader) return;
    for (const e of events) {
      switch (e.type) {
        case 'waiting':
        case 'semWaiting': {
          if (src === undefined || this.legacyWaits) break;
          const sem = e.type === 'semWaiting';
          const w = sem ? src.semWaitOf(e.name, e.sessionId) : src.waitOf(e.name, e.sessionId);
          if (w !== undefined) this.trackLogWait(e.name, e.sessionId, w, src.logTimeMs, nowMs, sem);
          break;
        }
        case 'sessionOpened': this.trackSession(e.sessionId, e.ttlMs, nowMs); break;
        case 'sessionEnded':
          this.untrack(this.sessionTracks, e.sessionId);
          this.untrackHolds(e.sessionId);
          break;
        case 'lockDelayStarted': this.trackDelay(e.name, e.since, nowMs + e.delayMs); break;
        case 'lockDelayEnded': this.untrack(this.delayTracks, e.name); break;
        case 'granted':
          this.untrack(this.waitTracks, waitKey(e.name, e.sessionId));
          // the grant was made by this apply: its max hold is counted from now
          if (e.maxHoldMs !== undefined) this.trackHold('lock', e.name, e.sessionId, e.fencingToken, nowMs + e.maxHoldMs);
          break;
        case 'waitEnded': this.untrack(this.waitTracks, waitKey(e.name, e.sessionId)); break;
        case 'semGranted':
          this.untrack(this.waitTracks, waitKey(e.name, e.sessionId, true));
          if (e.maxHoldMs !== undefined) this.trackHold('semaphore', e.name, e.sessionId, e.fencingToken, nowMs + e.maxHoldMs);
          break;
        case 'semWaitEnded': this.untrack(this.waitTracks, waitKey(e.name, e.sessionId, true)); break;
        case 'revoked':
        case 'grantExpired': this.untrackHold(e.kind, e.name, e.sessionId, e.fencingToken); break;
      }
    }
  }

  private trackSession(sessionId: string, ttlMs: number, nowMs: number): void {
    this.untrack(this.sessionTracks, sessionId);
    const t = { kind: 'session' as const, sessionId, ttlMs, deadlineMs: nowMs + ttlMs, proposedAtMs: NOT_PROPOSED, dead: false };
    this.sessionTracks.set(sessionId, t);
    this.heap.push(t.deadlineMs, t);
  }

  private trackDelay(name: string, since: number, deadlineMs: number): void {
    this.untrack(this.delayTracks, name);
    const t = { kind: 'delay' as const, name, since, deadlineMs, proposedAtMs: NOT_PROPOSED, dead: false };
    this.delayTracks.set(name, t);
    this.heap.push(deadlineMs, t);
  }

  private trackHold(target: GrantKind, name: string, sessionId: string, token: number, deadlineMs: number): void {
    const k = holdKey(target, name, sessionId);
    this.untrack(this.holdTracks, k);
    const t = { kind: 'hold' as const, target, name, sessionId, token, deadlineMs, proposedAtMs: NOT_PROPOSED, dead: false };
    this.holdTracks.set(k, t);
    let keys = this.holdsBySession.get(sessionId);
    if (keys === undefined) this.holdsBySession.set(sessionId, (keys = new Set()));
    keys.add(k);
    this.heap.push(deadlineMs, t);
  }

  /** forgets the hold of that grant (not a later grant of the same name and session) */
  private untrackHold(target: GrantKind, name: string, sessionId: string, token: number): void {
    const k = holdKey(target, name, sessionId);
    if (this.holdTracks.get(k)?.token !== token) return;
    this.untrack(this.holdTracks, k);
    const keys = this.holdsBySession.get(sessionId);
    keys?.delete(k);
    if (keys?.size === 0) this.holdsBySession.delete(sessionId);
  }

  private untrackHolds(sessionId: string): void {
    for (const k of this.holdsBySession.get(sessionId) ?? []) this.untrack(this.holdTracks, k);
    this.holdsBySession.delete(sessionId);
  }

  private untrack(m: Map<string, Track>, key: string): void {
    const t = m.get(key);
    if (t === undefined) return;
    t.dead = true; // its heap entry is discarded when it surfaces
    m.delete(key);
  }

  /** Commands to propose now: each due item once, then again every retryMs until done.
   *  live: when given, a max hold whose grant no longer stands is dropped unproposed;
   *  waitLive: the same for a wait that ended unseen (without it, its cancel is repeated
   *  until an apply shows the wait's end). */
  due(nowMs: number, live?: GrantLive, waitLive?: WaitLive): Command[] {
    const out: Command[] = [];
    if (!this.leader) return out;
    for (let at = this.heap.peekAt(); at !== undefined && at <= nowMs; at = this.heap.peekAt()) {
      const t = (this.heap.pop() as { value: Track }).value;
      if (t.dead) continue;
      const dueAt = t.proposedAtMs === NOT_PROPOSED ? t.deadlineMs : t.proposedAtMs + this.retryMs;
      if (dueAt > nowMs) {
        this.heap.push(dueAt, t); // renewed since it was pushed: lazy re-insert
        continue;
      }
      if (t.kind === 'hold' && live !== undefined && !live(t.target, t.name, t.sessionId, t.token)) {
        this.untrackHold(t.target, t.name, t.sessionId, t.token); // released or ended otherwise
        continue;
      }
      if (t.kind === 'wait' && !this.legacyWaits && waitLive !== undefined && !waitLive(t.semaphore ? 'semaphore' : 'lock', t.name, t.sessionId, t.since)) {
        this.untrack(this.waitTracks, waitKey(t.name, t.sessionId, t.semaphore)); // granted or ended unseen
        continue;
      }
      t.proposedAtMs = nowMs;
      out.push(this.commandFor(t));
      if (t.kind === 'wait' && this.legacyWaits && ++t.attempts >= LEGACY_WAIT_ATTEMPTS) this.untrack(this.waitTracks, waitKey(t.name, t.sessionId, t.semaphore));
      else this.heap.push(nowMs + this.retryMs, t);
    }
    return out;
  }

  /** the command that ends `t`, naming it (since 0: an item whose identity is unknown,
   *  restored from an old snapshot; the FSM applies a command without since to it) */
  private commandFor(t: Track): Command {
    switch (t.kind) {
      case 'session': return { kind: 'expireSession', sessionId: t.sessionId };
      case 'hold': return { kind: 'expireHold', target: t.target, name: t.name, sessionId: t.sessionId, fencingToken: t.token };
      case 'delay': return t.since === 0 || this.legacy.includes('endLockDelay') ? { kind: 'endLockDelay', name: t.name } : { kind: 'endLockDelay', name: t.name, since: t.since };
      case 'wait':
        if (t.semaphore) return { kind: 'semCancelWait', name: t.name, sessionId: t.sessionId, since: t.since };
        return t.since === 0 || this.legacy.includes('cancelWait') ? { kind: 'cancelWait', name: t.name, sessionId: t.sessionId } : { kind: 'cancelWait', name: t.name, sessionId: t.sessionId, since: t.since };
    }
  }

  /** tracked items, for metrics and tests */
  counts(): { sessions: number; delays: number; waits: number } {
    return { sessions: this.sessionTracks.size, delays: this.delayTracks.size, waits: this.waitTracks.size };
  }

  /** tracked max-hold deadlines, for tests */
  holdCount(): number {
    return this.holdTracks.size;
  }
}
