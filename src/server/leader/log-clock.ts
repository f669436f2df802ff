// The log time a leader stamps on every entry it proposes (Envelope.atMs). The lock FSM
// ages Idempotency-Keys by it (docs/lock-fsm.md "Log time"), so it must not follow any
// node's wall clock: one leader whose wall clock stepped forward by more than the key
// lifetime would otherwise evict every key at its next entry, and a retry after a 504
// would run twice. The rule:
//   stamp = max(last stamp, applied log time) + min(monotonic ms since the last stamp, maxStepMs)
// A leader only ever adds time it measured itself on a monotonic clock while in office
// (since taking office, then since its previous stamp), so log time runs at most as fast
// as real time as long as any one leader's monotonic clock is sane, whatever the wall
// clocks do; maxStepMs bounds what even a broken monotonic clock can add in one stamp.
// Log time may run slower than real time (elections, idle leaders): keys then live
// longer than the contract's minimum, never shorter.

export interface LogClockOptions {
  /** monotonic ms of this process (performance.now, the sim's clock) */
  monoMs(): number;
  /** the log time of the applied state (LockFsm.logTimeMs): a new leader continues
   *  from there, and catches up as it applies entries its predecessors stamped */
  appliedLogTimeMs(): number;
  /** bound on what one stamp adds (default 60000) */
  maxStepMs?: number;
  /** TEST ONLY (the mutation table in docs/simulation-lock.md): stamp this wall clock
   *  instead, as versions before log time did */
  wallMs?: () => number;
}

export const DEFAULT_MAX_STEP_MS = 60_000;

export class LogClock {
  private last = 0;
  private lastMono: number;
  private readonly maxStepMs: number;

  constructor(private readonly o: LogClockOptions) {
    this.maxStepMs = o.maxStepMs ?? DEFAULT_MAX_STEP_MS;
    if (!(this.maxStepMs > 0)) throw new Error('LogClock: maxStepMs must be positive');
    this.lastMono = o.monoMs();
  }

  /** taking office: time before this moment is not ours to vouch for */
  takeOffice(): void {
    this.lastMono = this.o.monoMs();
  }

  /** the log time for the next proposal (a non-negative integer, never below the last) */
  stamp(): number {
    if (this.o.wallMs) return Math.max(0, Math.floor(this.o.wallMs()));
    const mono = this.o.monoMs();
    const elapsed = Math.min(Math.max(0, mono - this.lastMono), this.maxStepMs);
    this.lastMono = mono;
    // kept fractional: at thousands of stamps a second, flooring each step would stop time
    this.last = Math.max(this.last, this.o.appliedLogTimeMs()) + elapsed;
    return Math.floor(this.last);
  }
}
