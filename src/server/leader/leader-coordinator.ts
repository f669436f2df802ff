// Leader-side lease and wait coordination, under the REST-facing services: the driver's
// hooks feed the lessor, the wait registry and the hold timer; a lease is renewed only by
// the leader's lessor; a queued request waits here for the FSM's grant or the end of its
// wait, which the lessor times out (docs/lock-fsm.md "The lessor (leader only)"); a release that finds a
// wait instead of a grant withdraws it (docs/api.md "Release").
import type { ApplyOutput, Command, HolderInfo } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { RequestContext } from '../../api/service.js';
import { WaitRegistry, SEMAPHORE_PREFIX, type WaitOutcome } from './wait-registry.js';
import { LessorProposer } from './lessor-proposer.js';
import { HoldTimer } from './hold-timer.js';
import { unkeyed, type LeaderLog } from './leader-log.js';
import { sessionNotFound } from '../../api/result-errors.js';
import type { ServiceDeps } from './service-deps.js';

/** A request's place in a queue: the FSM's wait of `sessionId` on `name`, named by the
 *  index that began it (`since`; 0 for a wait from before waits had one), so that the
 *  cancel ending it cannot end another wait of the session (docs/lock-fsm.md). */
export interface QueuedWait {
  target: 'lock' | 'semaphore';
  name: string;
  sessionId: string;
  since: number;
}

/** the results a withdrawal looks for, per release command */
const WITHDRAWAL = {
  release: { granted: 'acquired', released: 'released' },
  semRelease: { granted: 'sem_acquired', released: 'sem_released' },
} as const;

export class LeaderCoordinator {
  private readonly waits = new WaitRegistry();
  private readonly lessorProposer: LessorProposer;
  /** raftlock_lock_hold_seconds (hold-timer.ts) */
  private readonly holdTimer: HoldTimer;

  constructor(private readonly d: ServiceDeps, private readonly log: LeaderLog) {
    // the driver tells the gate this node's term and applied index (lessor-proposer.ts)
    this.lessorProposer = new LessorProposer((cmd) => log.send(cmd), d.driver);
    this.holdTimer = new HoldTimer(d.metrics);
  }

  // ---- events from the driver ------------------------------------------------------

  /** every applied entry's output, in log order (driver hook) */
  onApplied(out: ApplyOutput | undefined): void {
    if (!out) return;
    this.holdTimer.onApplied(out, this.d.nowMs());
    if (out.events.length === 0) return;
    // with the state after this apply: a wait it queued is armed whoever proposed it
    this.d.lessor.observe(out.events, this.d.nowMs(), this.d.app.fsm);
    for (const e of out.events) this.waits.onEvent(e, (name) => this.holderOf(name));
  }

  onRoleChange(isLeader: boolean): void {
    if (isLeader) {
      this.log.clock.takeOffice();
      this.d.lessor.promote(this.d.nowMs(), this.d.app.fsm);
    } else {
      this.d.lessor.demote();
      // Waiting acquires on a deposed leader: the outcome is now the next leader's. The
      // client retries with its Idempotency-Key and finds its place or its grant.
      this.waits.abortAll({ kind: 'unknown' });
    }
  }

  /** driver tick: propose what the lessor says is due; keep waiting clients' sessions alive */
  onTick(): void {
    if (this.d.driver.currentRole !== 'leader') return;
    const now = this.d.nowMs();
    for (const sid of this.waits.sessionsWaiting()) this.d.lessor.renew(sid, now);
    this.proposeDue(now);
  }

  /** what the lessor says is due; a max hold or wait that ended unseen is dropped unproposed */
  private proposeDue(now: number): void {
    const fsm = this.d.app.fsm;
    this.lessorProposer.proposeDue(this.d.lessor.due(now,
      (target, name, sid, token) => fsm.holdsGrant(target, name, sid, token),
      (target, name, sid, since) => fsm.waitStands(target, name, sid, since)));
  }

  /** graceful shutdown: every waiting request is answered. Not with 503: each of those
   *  acquires is a committed entry whose wait the next leader re-arms (docs/api.md "Errors"). */
  shutdown(): void {
    this.waits.abortAll({ kind: 'shutdown' });
  }

  // ---- leases ----------------------------------------------------------------------

  /**
   * Renew the session's lease from the request's arrival. Only the leader's lessor can; a
   * node that lost leadership since the request arrived (its proposal was committed by the
   * next leader, or leadership went during the read barrier) must not answer
   * session_not_found — the session may be alive and well — but: for a keepalive or renew,
   * 503 (nothing was renewed; retry); for a grant, 504 (it was applied; retry with the same
   * Idempotency-Key and the leader answers it with the lease renewed). Found by jepsen-lite.
   */
  renewLease(sessionId: string, arrival: number, onLostLeadership: 'unavailable' | 'timeout'): void {
    if (!this.d.lessor.isLeader) {
      throw new Failure(
        onLostLeadership,
        onLostLeadership === 'timeout'
          ? 'leadership changed before the lease could be renewed; the command was applied: retry with the same Idempotency-Key'
          : 'this node stopped leading before the lease could be renewed; nothing was renewed, retry',
      );
    }
    if (!this.d.lessor.renew(sessionId, arrival)) throw sessionNotFound(sessionId);
  }

  // ---- waits -----------------------------------------------------------------------

  /** the registry's own end of a wait, past wait_ms: the lessor's cancel normally ends it first */
  waitBackstopMs(): number {
    return Math.max(5000, this.d.electionTimeoutMaxMs);
  }

  /**
   * Wait for the FSM to grant the queued request or end its wait. The lessor ends the wait
   * at arrival + waitMs by a cancel naming it (it armed the wait when it applied, in log
   * time; this request's arrival is the exact start: Lessor.trackWait); the registry gives up a backstop
   * later. A client that goes away ('aborted') gives its place up, so that nothing is
   * granted to nobody: the lessor's deadline for the wait becomes now, and its cancel is
   * proposed at once and again until the wait ends. It may lose to a grant, so the caller
   * answers "outcome unknown", never 503.
   */
  async awaitGrant(w: QueuedWait, arrival: number, waitMs: number, signal: AbortSignal): Promise<WaitOutcome> {
    this.d.lessor.trackWait(w.name, w.sessionId, arrival + waitMs, w.since, w.target === 'semaphore', arrival);
    const key = w.target === 'semaphore' ? SEMAPHORE_PREFIX + w.name : w.name;
    const outcome = await this.waits.wait(key, w.sessionId, waitMs + this.waitBackstopMs(), signal);
    if (outcome.kind === 'aborted' && this.d.driver.currentRole === 'leader') {
      const now = this.d.nowMs();
      this.d.lessor.endWaitNow(w.name, w.sessionId, w.since, now, w.target === 'semaphore');
      this.proposeDue(now);
    }
    return outcome;
  }

  /**
   * A release by a session that does not hold the name but waits for it withdraws that
   * wait, so that a client cleaning up after an acquire it gave up on cannot be granted the
   * lock or the permits later (docs/api.md "Release", docs/client.md). `cancel` ends the
   * wait the release found (for a semaphore it names the wait: if that wait ends before
   * the cancel applies, a newer wait of the session is left alone); undefined: nothing to
   * withdraw. If the grant wins the race against the cancel, `release` is sent again and
   * releases it after all: returns true (the answer is then 200 released). The release was
   * applied first, so its permission check (actor) already passed for this session.
   *
   * Only for the attempt whose release applied first (`replayed` false): right after it,
   * the state says whether that release met a wait or a grant that followed it. A retry
   * with the same Idempotency-Key changes nothing and answers the stored result: by the
   * time a late copy arrives, the session may hold a later grant or wait for it, which the
   * client asked for after the first answer. jepsen-lite (seed 5151) caught a retry that
   * ran the withdrawal again and released such a grant. If the first attempt's withdrawal
   * released a grant (200) and that answer was lost, the retry answers 200 too: the second
   * release names the client's key (`settles`), and the state machine makes that key's
   * stored answer the release.
   */
  async withdrawWait(release: Extract<Command, { kind: 'release' | 'semRelease' }>, cancel: Command | undefined, replayed: boolean, ctx: RequestContext): Promise<boolean> {
    if (replayed || cancel === undefined) return false;
    const expect = WITHDRAWAL[release.kind];
    const inner = unkeyed(ctx);
    const c = await this.log.followUp(cancel, inner);
    if (!(c.ok && c.kind === expect.granted)) return false;
    // the client's key then answers this release, not the first attempt's not_holder
    const again: Command = ctx.idempotencyKey !== undefined ? Object.assign({}, release, { settles: ctx.idempotencyKey }) : release;
    const r = await this.log.followUp(again, inner);
    return r.ok && r.kind === expect.released;
  }

  private holderOf(name: string): HolderInfo | undefined {
    return this.d.app.fsm.getLock(name).holder;
  }
}
