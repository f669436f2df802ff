// The lessor: leader-only bookkeeping of time (after etcd server/lease/lessor.go:
// Promote / Demote / Renew). It never changes lock state itself: it turns deadlines into
// commands (expireSession, endLockDelay, cancelWait) that the leader proposes through the
// log (architecture §1 rule 3), so every replica agrees on what expired.
//
// Guarantees it provides (api.md §3 "TTL semantics"):
//  - never early: a deadline only moves later (renew takes the max), and promote() gives
//    every session a full TTL from the moment the new leader took office;
//  - never late: due(now) reports everything whose deadline is <= now, so a driver
//    calling it every tickMs proposes an expiry within one tick of its deadline;
//  - a follower tracks nothing and proposes nothing (demote forgets everything).
// Each command is reported once, then again every retryMs until an apply shows it done
// (a proposal can be dropped, e.g. during a leadership transfer). So several copies of a
// command can be in the log at once: endLockDelay and cancelWait therefore name the delay
// or wait they end by the log index at which it began (`since`), and a copy that lands
// after its item is over does nothing (docs/lock-fsm.md "Lessor commands name what they end"). A cancelWait is tried
// at most WAIT_ATTEMPTS times: the API layer may track a wait whose grant it has not
// seen yet, and a cancelWait for a wait that is already over has nothing to report.
//
// Each tracked item has exactly one heap entry. A renewal does not touch the heap: when
// the entry comes due, the item is re-pushed at its current deadline (lazy update), so a
// keepalive costs O(1) and a due item O(log n).

import type { Command } from './commands.js';
import { DeadlineHeap } from './deadline-heap.js';
import type { FsmEvent } from './results.js';

/** What promote() reads from the state machine (LockFsm implements it). */
export interface LessorSource {
  sessions(): Iterable<{ sessionId: string; ttlMs: number }>;
  locksInDelay(): Iterable<{ name: string; delayMs: number; since: number }>;
  waits(): Iterable<{ name: string; sessionId: string; waitMs: number; since: number }>;
}

export interface LessorOptions {
  /** how often the driver calls due(); used as the default retry unit (default 100) */
  tickMs?: number;
  /** re-propose a due command not yet seen applied after this long (default 20 ticks) */
  retryMs?: number;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): propose these commands
   *  without `since`, as versions before they named their item did */
  legacyCommands?: readonly ('endLockDelay' | 'cancelWait')[];
}

type Track =
  | { kind: 'session'; sessionId: string; ttlMs: number; deadlineMs: number; proposedAtMs: number; dead: boolean }
  | { kind: 'delay'; name: string; since: number; deadlineMs: number; proposedAtMs: number; dead: boolean }
  | { kind: 'wait'; name: string; sessionId: string; since: number; deadlineMs: number; proposedAtMs: number; dead: boolean; attempts: number };

const NOT_PROPOSED = -1;
const WAIT_ATTEMPTS = 3;

function waitKey(name: string, sessionId: string): string {
  return `${name}\u0000${sessionId}`; // neither a lock name nor a session id holds NUL
}

export class Lessor {
  readonly tickMs: number;
  readonly retryMs: number;
  private readonly legacy: readonly string[];
  private leader = false;
  private readonly sessionTracks = new Map<string, Track & { kind: 'session' }>();
  private readonly delayTracks = new Map<string, Track & { kind: 'delay' }>();
  private readonly waitTracks = new Map<string, Track & { kind: 'wait' }>();
  private readonly heap = new DeadlineHeap<Track>();

  constructor(opts: LessorOptions = {}) {
    this.tickMs = opts.tickMs ?? 100;
    this.retryMs = opts.retryMs ?? 20 * this.tickMs;
    this.legacy = opts.legacyCommands ?? [];
    if (!(this.tickMs > 0) || !(this.retryMs > 0)) throw new Error('Lessor: tickMs and retryMs must be positive');
  }

  get isLeader(): boolean {
    return this.leader;
  }

  /** Takes office: every session gets a full TTL from now, every lock-delay its full delay,
   *  every wait its full wait (the old leader's clocks are not trusted, only extended). */
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
    for (const w of src.waits()) this.trackWait(w.name, w.sessionId, nowMs + w.waitMs, w.since);
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
    this.sessionTracks.clear();
    this.delayTracks.clear();
    this.waitTracks.clear();
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

  /** The API layer queued a wait that arrived at t with wait_ms w: deadline t + w. since:
   *  the wait's identity in the FSM (LockFsm.waitOf). A later request for the same wait
   *  only extends it; one for a newer wait of the same session replaces it. */
  trackWait(name: string, sessionId: string, deadlineMs: number, since: number): void {
    if (!this.leader) return;
    const k = waitKey(name, sessionId);
    const t = this.waitTracks.get(k);
    if (t !== undefined && t.since === since) {
      t.deadlineMs = Math.max(t.deadlineMs, deadlineMs);
      return;
    }
    this.untrack(this.waitTracks, k);
    const nt = { kind: 'wait' as const, name, sessionId, since, deadlineMs, proposedAtMs: NOT_PROPOSED, dead: false, attempts: 0 };
    this.waitTracks.set(k, nt);
    this.heap.push(deadlineMs, nt);
  }

  /** Feeds the events of every apply (in log order) on the leader. */
  observe(events: readonly FsmEvent[], nowMs: number): void {
    if (!this.leader) return;
    for (const e of events) {
      switch (e.type) {
        case 'sessionOpened': this.trackSession(e.sessionId, e.ttlMs, nowMs); break;
        case 'sessionEnded': this.untrack(this.sessionTracks, e.sessionId); break;
        case 'lockDelayStarted': this.trackDelay(e.name, e.since, nowMs + e.delayMs); break;
        case 'lockDelayEnded': this.untrack(this.delayTracks, e.name); break;
        case 'granted':
        case 'waitEnded': this.untrack(this.waitTracks, waitKey(e.name, e.sessionId)); break;
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

  private untrack(m: Map<string, Track>, key: string): void {
    const t = m.get(key);
    if (t === undefined) return;
    t.dead = true; // its heap entry is discarded when it surfaces
    m.delete(key);
  }

  /** Commands to propose now: each due item once, then again every retryMs until done. */
  due(nowMs: number): Command[] {
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
      t.proposedAtMs = nowMs;
      out.push(this.commandFor(t));
      if (t.kind === 'wait' && ++t.attempts >= WAIT_ATTEMPTS) this.untrack(this.waitTracks, waitKey(t.name, t.sessionId));
      else this.heap.push(nowMs + this.retryMs, t);
    }
    return out;
  }

  /** the command that ends `t`, naming it (since 0: an item whose identity is unknown,
   *  restored from an old snapshot; the FSM applies a command without since to it) */
  private commandFor(t: Track): Command {
    switch (t.kind) {
      case 'session': return { kind: 'expireSession', sessionId: t.sessionId };
      case 'delay': return t.since === 0 || this.legacy.includes('endLockDelay') ? { kind: 'endLockDelay', name: t.name } : { kind: 'endLockDelay', name: t.name, since: t.since };
      case 'wait': return t.since === 0 || this.legacy.includes('cancelWait') ? { kind: 'cancelWait', name: t.name, sessionId: t.sessionId } : { kind: 'cancelWait', name: t.name, sessionId: t.sessionId, since: t.since };
    }
  }

  /** tracked items, for metrics and tests */
  counts(): { sessions: number; delays: number; waits: number } {
    return { sessions: this.sessionTracks.size, delays: this.delayTracks.size, waits: this.waitTracks.size };
  }
}
