// The revocation and max-hold checker of the lock simulation (docs/simulation-lock.md
// "Revocation and maximum hold"; the rules are docs/lock-fsm.md "Revocation and maximum
// hold"). Over the applied stream (the first applier of each index) it keeps every grant
// made with a max hold: its max_hold_ms M, its log time G (the highest `atMs` applied up
// to the granting entry, as the FSM's grantedAtMs) and the real (simulated) time S at
// which the granting entry was stamped. It checks:
//  - MaxHoldEarly: a `grantExpired {reason: max_hold}` ends a grant that was made with a
//    max hold, the very grant its `expireHold` names (by token), and no earlier than
//    S + M of real time (a hold is never cut short: log time runs no faster than real
//    time, so a new leader's re-armed deadline is never before it either);
//  - MaxHoldBound: a hold ends in time whatever keepalives do. Each leader that tracks the
//    hold (it applied the grant while leading: deadline D = then + M; or it took office
//    with the grant applied: D = then + max(0, min(M, G + M − its applied log time))) must
//    have ended it before any entry it stamps more than one tick after D: its lessor
//    proposes the expireHold at the first tick at or after D, ahead of anything it stamps
//    later, so that entry cannot apply while the grant stands. In log time this is the
//    contract's bound: the expiry is stamped at G + M plus what the log counted between
//    the grant's stamp and its apply, and plus the log time a new leader catches up on.
//    A proposal the lessor fault held back excuses that leader (the fault delays it past
//    later entries, which a real slow commit would not). (The proposer's gate holds a
//    repeat back only behind a copy of the same leader's term, which is ahead of anything
//    it stamps later: lessor-proposer.ts; a copy of an earlier term no longer does.)
//  - Revoked: after applying a revoke, on every node, the grants it names are over at that
//    index, and a revoke of every grant of a name leaves only grants made by that same
//    entry (the next waiters, with larger tokens: FencingTokens checks they increase).
import type { ApplyOutput, Command, FsmEvent, GrantKind, LockFsm } from '../../../src/lock-fsm/index.js';
import type { ModeViolation } from './mode-checkers.js';

interface Hold {
  kind: GrantKind;
  name: string;
  sid: string;
  token: number;
  maxHoldMs: number;
  /** log time of the grant (the FSM's grantedAtMs) */
  logMs: number;
  /** real time the granting entry was stamped (its proposal) */
  stampedMs: number;
  index: number;
  /** leader tenure ("node/term") → the deadline that leader's lessor must keep */
  deadlines: Map<string, number>;
  excused: Set<string>;
}

/** who stamped an entry, in which term, at what real time (the simulated LockNode tells) */
export interface StampInfo { node: string; term: number; realMs: number }

interface Revoke { target: GrantKind; name: string; sessionId?: string; revoked: number[]; granted: Set<number> }

export class HoldShadow {
  private readonly holds = new Map<number, Hold>();
  /** log time after each applied index (the running max of atMs) */
  private readonly logAt: number[] = [0];
  private readonly revokes = new Map<number, Revoke>();
  readonly counts = { holdsGranted: 0, holdExpiries: 0, holdBoundChecks: 0, holdLateMsMax: 0, revokesApplied: 0, grantsRevoked: 0, revokeChecks: 0 };

  constructor(private readonly fail: ModeViolation, private readonly tickMs: number,
    /** false: time checks off (the wallClockStamps mutation makes log time a wall clock) */
    private readonly timed = true) {}

  logTimeAt(index: number): number {
    return this.logAt[Math.min(index, this.logAt.length - 1)] ?? 0;
  }

  /**
   * The first apply anywhere of `index` (cmd: the decoded command of a normal entry; atMs
   * its stamp, when it has one; stamp: who stamped it, when known), with the first
   * applier's state after it (`fsm`) and the real time now.
   */
  onApplied(index: number, cmd: Command | undefined, atMs: number | undefined, stamp: StampInfo | undefined, out: ApplyOutput, fsm: LockFsm, nowMs: number): void {
    const log = Math.max(this.logAt[this.logAt.length - 1] ?? 0, atMs ?? 0);
    this.logAt[index] = log;
    const granted = new Set<number>();
    for (const e of out.events) {
      if (e.type === 'grantExpired') this.onExpired(index, cmd, e, nowMs);
      if ((e.type === 'granted' || e.type === 'semGranted')) {
        granted.add(e.fencingToken);
        if (e.maxHoldMs !== undefined) {
          this.counts.holdsGranted++;
          this.holds.set(e.fencingToken, {
            kind: e.type === 'granted' ? 'lock' : 'semaphore', name: e.name, sid: e.sessionId, token: e.fencingToken, maxHoldMs: e.maxHoldMs,
            logMs: log, stampedMs: stamp?.realMs ?? nowMs, index, deadlines: new Map(), excused: new Set(),
          });
        }
      }
    }
    const r = out.result;
    if (cmd?.kind === 'revoke' && r.ok && r.kind === 'revoked') {
      this.counts.revokesApplied++;
      this.counts.grantsRevoked += r.revoked.length;
      this.revokes.set(index, { target: cmd.target, name: cmd.name, ...(cmd.sessionId !== undefined ? { sessionId: cmd.sessionId } : {}), revoked: r.revoked.map((g) => g.fencingToken), granted });
    }
    // the holds that ended by this entry (whatever ended them) leave the shadow
    for (const [t, h] of this.holds) if (!fsm.holdsGrant(h.kind, h.name, h.sid, t)) this.holds.delete(t);
    if (!this.timed || stamp === undefined) return;
    const tenure = `${stamp.node}/${stamp.term}`;
    for (const h of this.holds.values()) {
      const d = h.deadlines.get(tenure);
      if (d === undefined || h.excused.has(tenure)) continue;
      this.counts.holdBoundChecks++;
      if (stamp.realMs > d + this.tickMs) {
        this.fail('MaxHoldBound', `${h.kind} ${h.name} grant to ${h.sid} (token ${h.token}, max hold ${h.maxHoldMs} ms, granted at index ${h.index}, log time ${h.logMs}) still stands after entry ${index} ` +
          `${cmd ? JSON.stringify(cmd) : ''}, which ${tenure} stamped at ${stamp.realMs} ms, past that leader's deadline ${d} ms (log time now ${log}, ${log - h.logMs - h.maxHoldMs} ms past grant + max hold)`);
      }
      this.counts.holdLateMsMax = Math.max(this.counts.holdLateMsMax, log - h.logMs - h.maxHoldMs);
    }
  }

  private onExpired(index: number, cmd: Command | undefined, e: Extract<FsmEvent, { type: 'grantExpired' }>, nowMs: number): void {
    this.counts.holdExpiries++;
    const h = this.holds.get(e.fencingToken);
    const what = `${e.kind} ${e.name} grant to ${e.sessionId} (token ${e.fencingToken}) ended by max hold at index ${index}`;
    if (h === undefined) this.fail('MaxHoldEarly', `${what}, but it was granted with no max hold`);
    if (cmd?.kind === 'expireHold' && cmd.fencingToken !== e.fencingToken) this.fail('MaxHoldEarly', `${what} by ${JSON.stringify(cmd)}, which names token ${cmd.fencingToken}`);
    if (this.timed && nowMs < h.stampedMs + h.maxHoldMs) {
      this.fail('MaxHoldEarly', `${what} at ${nowMs} ms, before ${h.stampedMs + h.maxHoldMs} (granting entry ${h.index} stamped at ${h.stampedMs}, max hold ${h.maxHoldMs} ms)`);
    }
  }

  /** a leader's lessor began tracking the holds it can see: `node` applied a grant while
   *  leading (`grantTokens`: the grants of that apply), or took office (all of them) */
  onTracked(tenure: string, fsm: LockFsm, nowMs: number, grantTokens?: readonly number[]): void {
    if (!this.timed) return;
    const logNow = fsm.logTimeMs;
    for (const g of fsm.grantsWithMaxHold()) {
      const h = this.holds.get(g.fencingToken);
      if (h === undefined) continue; // not yet in the applied stream's view (cannot be: the stream leads)
      if (grantTokens !== undefined) {
        if (grantTokens.includes(g.fencingToken)) h.deadlines.set(tenure, nowMs + h.maxHoldMs);
      } else {
        h.deadlines.set(tenure, nowMs + Math.max(0, Math.min(h.maxHoldMs, h.logMs + h.maxHoldMs - logNow)));
      }
    }
  }

  /** the lessor fault held back this leader's expireHold of `token` */
  excuse(token: number, tenure: string): void {
    this.holds.get(token)?.excused.add(tenure);
  }

  /** a node's state after it applied `index`: a revoke's grants are over, and a revoke of
   *  every grant of a name leaves only the grants that entry made */
  checkNode(fsm: LockFsm, index: number, where: string): void {
    const rv = this.revokes.get(index);
    if (rv === undefined) return;
    this.counts.revokeChecks++;
    const tokens = rv.target === 'lock'
      ? (fsm.getLock(rv.name).holders ?? []).map((h) => ({ sid: h.sessionId, token: h.fencingToken }))
      : fsm.getSemaphore(rv.name).holders.map((h) => ({ sid: h.sessionId, token: h.fencingToken }));
    for (const g of tokens) {
      if (rv.revoked.includes(g.token)) this.fail('Revoked', `${where}: ${rv.target} ${rv.name} grant token ${g.token} (${g.sid}) still stands after the revoke that ended it`);
      if ((rv.sessionId === undefined || rv.sessionId === g.sid) && !rv.granted.has(g.token)) {
        this.fail('Revoked', `${where}: ${rv.target} ${rv.name} grant token ${g.token} (${g.sid}) survived revoke ${rv.sessionId === undefined ? 'of every grant' : `of ${rv.sessionId}`}`);
      }
    }
  }
}
