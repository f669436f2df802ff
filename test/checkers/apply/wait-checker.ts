// The wait checker of the lock simulation (docs/simulation-lock.md "Waits"; the rules are
// docs/lock-fsm.md "The lessor (leader only)"). Over the applied stream (the first applier
// of each index) it keeps every queued wait — a lock or shared-lock request, a campaign, a
// semaphore request: its wait_ms W, its log time Q (the highest `atMs` applied up to the
// entry that queued it, as the FSM's queuedAtMs) — until the stream shows it over
// (granted, cancelled, its session ended). It checks:
//  - WaitBound: a wait ends in time whichever node proposed it and however many leaders
//    come between. Each leader that tracks the wait — it applied the queueing entry while
//    leading: deadline D = then + W; or it took office with the wait applied: D = then +
//    max(0, min(W, Q + W − its applied log time)) — must have ended it before any entry
//    it stamps more than one tick after D: its lessor proposes the cancel at the first
//    tick at or after D, ahead of anything it stamps later, so no such entry can apply
//    while the wait stands, and no such entry may be the grant of that wait (a grant to a
//    session after its wait ended). A request of the API layer for the wait (the client
//    asking again: arrival + W) moves D to that, if later. This is the election
//    bound: in log time a wait ends within W of its queueing, so in real time it outlives
//    W only by what log time did not count between the queueing and its end — the
//    acquire's commit latency, and per leader change the gap between the last entry of
//    the old leader and the new one taking office. The run records the largest overshoot,
//    in log time (`waitLateLogMsMax`: log time at the check − Q − W) and in real time from
//    the first apply of the queueing entry (`waitLateMsMax`: its end − that apply − W).
//    A cancel the lessor fault held back excuses that leader (the fault lets later
//    entries pass it, which a slow commit would not).
// Never early is WaitHeld's (checkers.ts): a wait is cancelled no earlier than W after the
// send of the request that queued it.
import type { ApplyOutput, Command, GrantKind, LockFsm } from '../../../src/lock-fsm/index.js';
import type { ModeViolation } from './mode-checkers.js';
import type { StampInfo } from './hold-checker.js';

interface Wait {
  target: GrantKind;
  name: string;
  sid: string;
  /** the index that queued it (the wait's identity) */
  since: number;
  waitMs: number;
  /** log time of the queueing (the FSM's queuedAtMs) */
  logMs: number;
  /** real time of its first apply */
  appliedMs: number;
  /** leader tenure ("node/term") → the deadline that leader's lessor must keep */
  deadlines: Map<string, number>;
  excused: Set<string>;
}

const keyOf = (target: GrantKind, name: string, sid: string): string => `${target}\u0000${name}\u0000${sid}`;

export class WaitShadow {
  private readonly waits = new Map<string, Wait>();
  private logNow = 0;
  readonly counts = { waitsQueued: 0, waitsEnded: 0, waitBoundChecks: 0, waitLateLogMsMax: 0, waitLateMsMax: 0 };

  constructor(private readonly fail: ModeViolation, private readonly tickMs: number,
    /** false: time checks off (the wallClockStamps mutation makes log time a wall clock) */
    private readonly timed = true) {}

  /**
   * The first apply anywhere of `index` (cmd: its decoded command; atMs its stamp; stamp:
   * who stamped it, when known), with the first applier's state after it and the real time.
   */
  onApplied(index: number, cmd: Command | undefined, atMs: number | undefined, stamp: StampInfo | undefined, out: ApplyOutput, fsm: LockFsm, nowMs: number): void {
    this.logNow = Math.max(this.logNow, atMs ?? 0);
    const tenure = stamp === undefined ? undefined : `${stamp.node}/${stamp.term}`;
    for (const e of out.events) {
      if (e.type === 'waiting' || e.type === 'semWaiting') {
        const target: GrantKind = e.type === 'semWaiting' ? 'semaphore' : 'lock';
        const w = target === 'semaphore' ? fsm.semWaitOf(e.name, e.sessionId) : fsm.waitOf(e.name, e.sessionId);
        if (w === undefined) continue; // queued and ended in one entry: nothing to time
        this.counts.waitsQueued++;
        this.waits.set(keyOf(target, e.name, e.sessionId), {
          target, name: e.name, sid: e.sessionId, since: w.since, waitMs: w.waitMs, logMs: w.queuedAtMs, appliedMs: nowMs, deadlines: new Map(), excused: new Set(),
        });
      }
      // a grant to a waiting session: no later than its deadline on the leader that stamped it
      if ((e.type === 'granted' || e.type === 'semGranted') && tenure !== undefined && stamp !== undefined) {
        const w = this.waits.get(keyOf(e.type === 'semGranted' ? 'semaphore' : 'lock', e.name, e.sessionId));
        if (w !== undefined) this.check(w, tenure, stamp, index, cmd, 'was granted by');
      }
    }
    // the waits this entry ended (whatever ended them) leave the shadow
    for (const [k, w] of this.waits) {
      if (fsm.waitStands(w.target, w.name, w.sid, w.since)) continue;
      this.waits.delete(k);
      this.counts.waitsEnded++;
      this.counts.waitLateMsMax = Math.max(this.counts.waitLateMsMax, nowMs - w.appliedMs - w.waitMs);
    }
    if (!this.timed || stamp === undefined || tenure === undefined) return;
    for (const w of this.waits.values()) this.check(w, tenure, stamp, index, cmd, 'still waits after');
  }

  private check(w: Wait, tenure: string, stamp: StampInfo, index: number, cmd: Command | undefined, what: string): void {
    if (!this.timed) return;
    const d = w.deadlines.get(tenure);
    if (d === undefined || w.excused.has(tenure)) return;
    this.counts.waitBoundChecks++;
    if (stamp.realMs > d + this.tickMs) {
      this.fail('WaitBound', `${w.target} ${w.name}: session ${w.sid} (wait_ms ${w.waitMs}, queued at index ${w.since}, log time ${w.logMs}) ${what} entry ${index} ` +
        `${cmd ? JSON.stringify(cmd) : ''}, which ${tenure} stamped at ${stamp.realMs} ms, past that leader's deadline ${d} ms for the wait ` +
        `(log time now ${this.logNow}, ${this.logNow - w.logMs - w.waitMs} ms past queued + wait_ms)`);
    }
    this.counts.waitLateLogMsMax = Math.max(this.counts.waitLateLogMsMax, this.logNow - w.logMs - w.waitMs);
  }

  /** a leader's lessor began tracking waits: `tenure` applied the entries that queued
   *  `queued` while leading, or took office (every wait of its state: queued undefined) */
  onTracked(tenure: string, fsm: LockFsm, nowMs: number, queued?: readonly { target: GrantKind; name: string; sid: string }[]): void {
    if (!this.timed) return;
    const logNow = fsm.logTimeMs;
    const arm = (target: GrantKind, name: string, sid: string): void => {
      const w = this.waits.get(keyOf(target, name, sid));
      const mine = target === 'semaphore' ? fsm.semWaitOf(name, sid) : fsm.waitOf(name, sid);
      if (w === undefined || mine === undefined || mine.since !== w.since || w.deadlines.has(tenure)) return;
      w.deadlines.set(tenure, nowMs + Math.max(0, Math.min(w.waitMs, mine.queuedAtMs + w.waitMs - logNow)));
    };
    if (queued !== undefined) {
      for (const q of queued) arm(q.target, q.name, q.sid);
      return;
    }
    for (const w of fsm.waits()) arm(w.semaphore === true ? 'semaphore' : 'lock', w.name, w.sessionId);
  }

  /** the API layer of `tenure` tracked the wait with the request's arrival + W: the lessor
   *  keeps the later of that and what it had (a later request extends the wait) */
  onApiTracked(tenure: string, target: GrantKind, name: string, sid: string, since: number, deadlineMs: number): void {
    const w = this.waits.get(keyOf(target, name, sid));
    if (w === undefined || w.since !== since) return;
    w.deadlines.set(tenure, Math.max(w.deadlines.get(tenure) ?? -Infinity, deadlineMs));
  }

  /** the lessor fault held back this leader's cancel of the wait */
  excuse(target: GrantKind, name: string, sid: string, tenure: string): void {
    this.waits.get(keyOf(target, name, sid))?.excused.add(tenure);
  }
}
