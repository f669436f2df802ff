// LockService on a real node: the REST contract (docs/contract.md) for sessions, locks
// and the cluster, in the contract's terms. Writes go through the log and linearizable
// reads through a read barrier (leader/leader-log.ts); leases and waits are the leader side's
// (leader/leader-coordinator.ts); semaphores and elections have their own services beside this
// one (semaphore-service.ts, election-service.ts).
import type { ApplyOutput, ApplyResult, Command, SessionInfo } from '../../lock-fsm/index.js';
import { isSessionId } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { ClusterView, GrantView, KeepaliveGrantView, KeepaliveView, LeaderOp, LockService, LockView, RequestContext, RevokedView, Routing, SessionView } from '../../api/service.js';
import { LeaderLog } from '../leader/leader-log.js';
import { LeaderCoordinator } from '../leader/leader-coordinator.js';
import { SemaphoreService } from './semaphore-service.js';
import { ElectionService } from './election-service.js';
import { LockSetService } from './lock-set-service.js';
import { asActor, newSessionId, ownerRefusal, requester } from './requester.js';
import { endedWaitAnswer, settledWait } from './ended-wait.js';
import { revokeGrants } from './revoke.js';
import { countedAcquire } from './acquire-metric.js';
import { grantOf, grantView, lockView, withHold } from '../../api/lock-views.js';
import { grantEndedBeforeAnswer, lockHeldError, lockStateNow, resultError, sessionNotFound } from '../../api/result-errors.js';
import type { ServiceDeps } from '../leader/service-deps.js';
import { ok, refused, settled, type Result } from '../../api/service-result.js';

type AcquireParams = { sessionId?: string; ttlMs?: number; waitMs: number; owner?: string; mode?: 'exclusive' | 'shared'; maxHoldMs?: number };

/** a lock grant as the state machine made it: an apply's `acquired` result, or a waiter's
 *  `granted` event with its session's ttl. The answer is built from it alone. */
type Granted = Pick<Extract<ApplyResult, { kind: 'acquired' }>, 'name' | 'sessionId' | 'fencingToken' | 'ttlMs' | 'mode'>;

/** a grant's answer, from the grant as the state machine made it */
function viewOf(g: Granted): GrantView {
  return grantView(g.name, g.sessionId, g.fencingToken, g.ttlMs, g.mode === 'shared' ? 'shared' : 'exclusive');
}

export class RaftLockService implements LockService {
  /** proposals and read barriers (leader/leader-log.ts) */
  readonly log: LeaderLog;
  /** leases, waits and the driver's hooks on the leader (leader/leader-coordinator.ts) */
  readonly leader: LeaderCoordinator;
  /** semaphores (docs/contract.md §4 "Semaphores") */
  readonly semaphores: SemaphoreService;
  /** leader election (docs/contract.md §4 "Leader election") */
  readonly elections: ElectionService;
  /** lock sets (docs/contract.md §5) */
  readonly lockSets: LockSetService;

  constructor(readonly d: ServiceDeps) {
    this.log = new LeaderLog(d);
    this.leader = new LeaderCoordinator(d, this.log);
    this.semaphores = new SemaphoreService(d, this.log, this.leader);
    this.elections = new ElectionService(d, this.log, this.leader);
    this.lockSets = new LockSetService(d, this.log, this.leader);
  }

  // ---- routing and health ----------------------------------------------------------

  routing(): Routing {
    // a removed node takes no part any more: it neither serves nor relays (clients fail over)
    if (this.d.membership.selfState() === 'removed') throw new Failure('unavailable', this.d.membership.notReadyReason() ?? 'removed');
    const leader = this.d.driver.currentLeader;
    return { isLeader: this.d.driver.currentRole === 'leader', leaderApi: leader ? this.d.membership.address(leader)?.api ?? null : null };
  }

  ready(): boolean {
    const st = this.d.driver.status();
    return st.leader !== null && this.d.driver.appliedIndex >= st.commit && this.notReadyReason() === null;
  }

  notReadyReason(): string | null {
    return this.d.readiness?.reason() ?? this.d.membership.notReadyReason();
  }

  // ---- the driver's hooks: the leader side's (leader/leader-coordinator.ts) -----------------

  onApplied(out: ApplyOutput | undefined): void {
    if (out) this.lockSets.onApplied(out);
    this.leader.onApplied(out);
  }

  onRoleChange(isLeader: boolean): void {
    this.leader.onRoleChange(isLeader);
  }

  onTick(): void {
    this.leader.onTick();
  }

  shutdown(): void {
    this.leader.shutdown();
  }

  // ---- sessions --------------------------------------------------------------------

  openSession(p: { ttlMs?: number; owner?: string; lockDelayMs?: number }, ctx: RequestContext): Promise<Result<{ session_id: string; ttl_ms: number }>> {
    return settled(() => this.open(p, ctx));
  }

  private async open(p: { ttlMs?: number; owner?: string; lockDelayMs?: number }, ctx: RequestContext): Promise<Result<{ session_id: string; ttl_ms: number }>> {
    const ttlMs = p.ttlMs ?? this.d.session.defaultTtlMs;
    for (let attempt = 0; attempt < 3; attempt++) {
      const cmd: Command = { kind: 'openSession', sessionId: newSessionId(), ttlMs, owner: p.owner ?? '', lockDelayMs: p.lockDelayMs ?? this.d.session.lockDelayMs };
      if (ctx.principal !== undefined) cmd.principal = ctx.principal;
      // the request as sent: the node's default ttl and lock-delay are not part of it
      // a second attempt follows an await: leadership is checked again (LeaderLog.followUp)
      const request = { op: 'session.open', name: '', body: { ttl_ms: p.ttlMs, owner: p.owner, lock_delay_ms: p.lockDelayMs } };
      const r = await (attempt === 0 ? this.log.submit(cmd, ctx, request) : this.log.followUp(cmd, ctx, request));
      if (r.ok && r.kind === 'session_opened') return ok({ session_id: r.sessionId, ttl_ms: r.ttlMs });
      if (!r.ok && r.code === 'session_exists') continue; // 128-bit collision: draw again
      return refused(resultError(r));
    }
    return refused(new Failure('unavailable', 'could not draw a fresh session id'));
  }

  keepalive(sessionId: string, ctx: RequestContext): Promise<Result<KeepaliveView>> {
    return settled(async () => {
      const arrival = this.d.nowMs();
      await this.log.readBarrier();
      const s = this.ownedSession(sessionId, ctx, undefined);
      if (!s.ok) return s;
      this.leader.renewLease(sessionId, arrival, 'unavailable');
      return ok(this.keepaliveView(s.value));
    });
  }

  /** the session and its grants as of the read barrier */
  private keepaliveView(s: SessionInfo): KeepaliveView {
    // The grants as of the read barrier (after the request arrived): a grant the client was
    // answered before it sent this keepalive is listed unless it was revoked or its max
    // hold ended — the SDK learns that here rather than with a read per keepalive.
    // waiters: how many requests wait on each grant's name (docs/contract.md §5 "Contention")
    const grants = this.d.app.fsm.sessionGrants(s.sessionId).map((g): KeepaliveGrantView => ({ kind: g.kind, name: g.name, fencing_token: g.fencingToken, ...(g.shared ? { mode: 'shared' as const } : {}), waiters: g.waiters }));
    return { session_id: s.sessionId, ttl_ms: s.ttlMs, grants };
  }

  getSession(sessionId: string, _ctx: RequestContext): Promise<Result<SessionView>> {
    return settled(async () => {
      await this.log.readBarrier();
      const s = this.liveSession(sessionId);
      if (!s.ok) return s;
      return ok({ session_id: s.value.sessionId, owner: s.value.owner, ttl_ms: s.value.ttlMs, locks: s.value.locks });
    });
  }

  closeSession(sessionId: string, ctx: RequestContext): Promise<Result<{ released: string[] }>> {
    return settled(async () => {
      if (!isSessionId(sessionId)) return refused(sessionNotFound(sessionId));
      const r = await this.log.submit(asActor(this.d, { kind: 'closeSession' as const, sessionId }, ctx, undefined), ctx, { op: 'session.close', name: sessionId, body: {} });
      if (r.ok && r.kind === 'session_closed') return ok({ released: r.released });
      return refused(resultError(r));
    });
  }

  // ---- locks -----------------------------------------------------------------------

  /** counted in raftlock_lock_acquire_total by its answer (acquire-metric.ts) */
  acquire(name: string, p: AcquireParams, ctx: RequestContext): Promise<Result<GrantView>> {
    return countedAcquire(this.d.metrics, (onQueued) => this.acquireGrant(name, p, ctx, onQueued));
  }

  private async acquireGrant(name: string, p: AcquireParams, ctx: RequestContext, onQueued: () => void): Promise<Result<GrantView>> {
    const arrival = this.d.nowMs();
    const who = requester(this.d, p, ctx, name);
    if (!who.ok) return who;
    const { sessionId, ...rest } = who.value;
    const cmd: Command = { kind: 'acquire', name, sessionId, waitMs: p.waitMs, ...rest };
    if (p.owner !== undefined) cmd.owner = p.owner;
    if (p.mode === 'shared') cmd.mode = 'shared';
    if (p.maxHoldMs !== undefined) cmd.maxHoldMs = p.maxHoldMs;
    // the request as sent (no default ttl, no drawn session id; not wait_ms: leader/request-digest.ts);
    // mode as the contract defaults it
    const request = { op: 'lock.acquire', name, body: { session_id: p.sessionId, ttl_ms: p.ttlMs, owner: p.owner, mode: p.mode ?? 'exclusive', max_hold_ms: p.maxHoldMs } };
    const out: ApplyOutput = await this.log.submitOutput(cmd, ctx, request);
    // the answer is the applied result's: its name, session and token (a replay answers
    // the key's first request, which the state machine matched to this one)
    const r = out.result;
    if (r.ok && r.kind === 'acquired') {
      if (out.replayed) return this.replayedGrant(r, arrival);
      return this.confirmGrant(r, arrival);
    }
    if (r.ok && r.kind === 'queued') {
      onQueued();
      return this.waitForGrant(cmd, r.name, r.sessionId, arrival, ctx);
    }
    return refused(resultError(r));
  }

  renew(name: string, sessionId: string, ctx: RequestContext): Promise<Result<GrantView>> {
    return settled(async () => {
      const arrival = this.d.nowMs();
      await this.log.readBarrier();
      const s = this.ownedSession(sessionId, ctx, name);
      if (!s.ok) return s;
      const h = grantOf(this.d.app.fsm.getLock(name), sessionId);
      if (!h) return refused(new Failure('not_holder', `session ${sessionId} does not hold lock ${name}`));
      this.leader.renewLease(sessionId, arrival, 'unavailable');
      return ok(withHold(grantView(name, sessionId, h.fencingToken, s.value.ttlMs, h.mode), this.d.app.fsm.holdLeftMs('lock', name, sessionId, h.fencingToken)));
    });
  }

  /** A release without a fencing token by a session that does not hold the lock but waits
   *  for it withdraws that wait (LeaderCoordinator.withdrawWait, docs/api.md "Release"). */
  release(name: string, sessionId: string, fencingToken: number | undefined, ctx: RequestContext): Promise<Result<{ name: string; released: true }>> {
    return settled(async () => {
      if (!isSessionId(sessionId)) return refused(sessionNotFound(sessionId));
      const cmd: Extract<Command, { kind: 'release' }> = { kind: 'release', name, sessionId };
      if (fencingToken !== undefined) cmd.fencingToken = fencingToken;
      asActor(this.d, cmd, ctx, name);
      const out = await this.log.submitOutput(cmd, ctx, { op: 'lock.release', name, body: { session_id: sessionId, fencing_token: fencingToken } });
      const r = out.result;
      if (r.ok && r.kind === 'released') return ok({ name: r.name, released: true as const });
      if (!r.ok && r.code === 'not_holder' && fencingToken === undefined && (await this.leader.withdrawWait(cmd, this.withdrawal(name, sessionId), out.replayed === true, ctx))) return ok({ name, released: true as const });
      return refused(resultError(r));
    });
  }

  /** revoke (the route checked `admin` on the name): docs/contract.md §4 "Revocation and maximum hold" */
  revoke(name: string, sessionId: string | undefined, ctx: RequestContext): Promise<Result<RevokedView>> {
    return revokeGrants(this.log, 'lock', name, sessionId, ctx);
  }

  getLock(name: string, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<Result<LockView>> {
    return settled(async () => ok(await this.log.read(consistency, () => lockView(this.d.app.fsm.getLock(name)))));
  }

  listLocks(prefix: string, limit: number, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<Result<LockView[]>> {
    return settled(async () => ok(await this.log.read(consistency, () => this.d.app.fsm.listLocks(prefix, limit).map(lockView))));
  }

  checkToken(name: string, fencingToken: number, _ctx: RequestContext): Promise<Result<{ name: string; current: boolean }>> {
    return settled(async () => {
      await this.log.readBarrier();
      return ok({ name, current: this.d.app.fsm.check(name, fencingToken) });
    });
  }

  // ---- cluster ---------------------------------------------------------------------

  cluster(): ClusterView {
    return this.d.clusterOps.view();
  }

  addMember(m: { id: string; api: string; peer: string; learner?: boolean }, ctx: RequestContext): Promise<Result<ClusterView>> {
    return this.d.clusterOps.add(m, ctx);
  }

  promoteMember(id: string, ctx: RequestContext): Promise<Result<ClusterView>> {
    return this.d.clusterOps.promote(id, ctx);
  }

  removeMember(id: string, ctx: RequestContext): Promise<Result<ClusterView>> {
    return this.d.clusterOps.remove(id, ctx);
  }

  transferLeadership(to: string | undefined, ctx: RequestContext): Promise<Result<{ leader_id: string }>> {
    return this.d.clusterOps.transfer(to, ctx);
  }

  /** The longest `op` takes here as the leader (a follower's relay waits that long). */
  leaderBudgetMs(op: LeaderOp, waitMs: number): number {
    if (op !== 'acquire') return this.d.clusterOps.leaderBudgetMs(op);
    // propose; wait up to the backstop past wait_ms; renew the lease (a read round). The
    // second proposal timeout was for asking again, which no longer happens (ended-wait.ts);
    // it stays as slack, so that a relay never gives up before the leader answers
    return 2 * (this.d.proposalTimeoutMs ?? 5000) + this.d.readTimeoutMs + waitMs + this.leader.waitBackstopMs();
  }

  // ---- internals ---------------------------------------------------------------------

  private liveSession(sessionId: string): Result<SessionInfo> {
    const s = isSessionId(sessionId) ? this.d.app.fsm.getSession(sessionId) : undefined;
    return s ? ok(s) : refused(sessionNotFound(sessionId));
  }

  /** the live session, if the request may act for it (its principal's, or an admin's):
   *  keepalive and renew */
  private ownedSession(sessionId: string, ctx: RequestContext, name: string | undefined): Result<SessionInfo> {
    const s = this.liveSession(sessionId);
    if (!s.ok) return s;
    const denied = ownerRefusal(this.d, s.value.principal, ctx, name);
    return denied ? refused(denied) : s;
  }

  /** what a release that found no grant withdraws: the session's wait for the lock, or a
   *  grant made between the release's commit and now (it is this session's to undo) */
  private withdrawal(name: string, sessionId: string): Command | undefined {
    const waits = this.d.app.fsm.getSession(sessionId)?.waiting.includes(name) === true;
    if (!waits && grantOf(this.d.app.fsm.getLock(name), sessionId) === undefined) return undefined;
    return { kind: 'cancelWait', name, sessionId };
  }

  /**
   * The FSM granted `g` (now, or as the stored answer of an idempotent retry). Answer with
   * the grant only if it still stands — later entries of the same committed batch may have
   * ended it before this answer runs — and the session's lease could be renewed from this
   * request's arrival; otherwise say what is true now. One look into the state machine
   * (holdsGrant); the answer itself is the apply's.
   */
  private confirmGrant(g: Granted, arrival: number): Result<GrantView> {
    const fsm = this.d.app.fsm;
    if (!fsm.holdsGrant('lock', g.name, g.sessionId, g.fencingToken)) {
      // a grant never outlives its session: an ended session is the truer answer
      if (!fsm.getSession(g.sessionId)) return refused(sessionNotFound(g.sessionId));
      return refused(grantEndedBeforeAnswer(`lock ${g.name}`, lockStateNow(fsm.getLock(g.name))));
    }
    return this.answerGrant(g, arrival);
  }

  /** a grant that stands: renew the lease from the request's arrival and answer it */
  private answerGrant(g: Granted, arrival: number): Result<GrantView> {
    this.leader.renewLease(g.sessionId, arrival, 'timeout');
    // its terms as they stand: a re-acquire that returns a grant made by an earlier request
    // of the session says how long that grant's max hold lets it last (jepsen-lite seed
    // 380155236: a client took such a grant for its session's lifetime)
    return ok(withHold(viewOf(g), this.d.app.fsm.holdLeftMs('lock', g.name, g.sessionId, g.fencingToken)));
  }

  /**
   * A retry (same Idempotency-Key) of an acquire that was granted: the answer is the first
   * one, token and all, whatever happened since (docs/contract.md "Idempotency"). While
   * that grant still stands this is a retry after an unknown outcome, and the lease is
   * renewed from this request as for a fresh grant; once it is gone (released, expired,
   * taken by another session) nothing is renewed or re-checked: the lock's state is not
   * this request's answer, and the token fences any use of the old grant.
   */
  private replayedGrant(r: Granted, arrival: number): Result<GrantView> {
    if (this.d.app.fsm.holdsGrant('lock', r.name, r.sessionId, r.fencingToken)) return this.answerGrant(r, arrival);
    return ok(viewOf(r));
  }

  /** `cmd`: the acquire as this request proposed it (its wait_ms) */
  private async waitForGrant(cmd: Extract<Command, { kind: 'acquire' }>, name: string, sessionId: string, arrival: number, ctx: RequestContext): Promise<Result<GrantView>> {
    const fsm = this.d.app.fsm;
    // The state may have moved on since the 'queued' answer (or this is a retry). This
    // request's own key says first what its wait came to (ended-wait.ts settledWait): a
    // grant that stands is answered; a refusal, or a grant gone since, is endedWaitAnswer's
    const settled = settledWait(fsm, ctx);
    if (settled !== undefined) {
      if (settled.ok && settled.kind === 'acquired' && fsm.holdsGrant('lock', settled.name, settled.sessionId, settled.fencingToken)) return this.answerGrant(settled, arrival);
      return endedWaitAnswer(fsm, ctx, 'lock', settled);
    }
    // no key, or a key still 'queued' (its wait has not ended; a request that joined the
    // session's wait settles with it, docs/lock-fsm.md "Idempotency"): the session's grant
    // of the name is the wait's
    const lock = fsm.getLock(name);
    const mine = grantOf(lock, sessionId);
    if (mine) {
      // it holds the lock, so its session is live (a grant never outlives it)
      const ttlMs = (fsm.getSession(sessionId) as SessionInfo).ttlMs;
      return this.answerGrant({ name, sessionId, fencingToken: mine.fencingToken, ttlMs, ...(mine.mode === 'shared' ? { mode: 'shared' as const } : {}) }, arrival);
    }
    // The 'queued' answer can reach a node that has lost leadership since it proposed (the
    // next leader committed the entry): only the leader may wait, renew and cancel.
    if (!this.d.lessor.isLeader) {
      return refused(new Failure('timeout', 'leadership changed while the acquire was queued; retry with the same Idempotency-Key to find your place or your grant'));
    }
    const s = fsm.getSession(sessionId);
    if (!s) return refused(sessionNotFound(sessionId));
    // the wait is over before this answer: what its key settled to, or unknown (ended-wait.ts)
    if (!s.waiting.includes(name)) return endedWaitAnswer(fsm, ctx, 'lock');

    const started = this.d.nowMs();
    const since = fsm.waitOf(name, sessionId)?.since ?? 0;
    const outcome = await this.leader.awaitGrant({ target: 'lock', name, sessionId, since }, arrival, cmd.waitMs, ctx.signal);
    this.d.metrics.lockWait.observe((this.d.nowMs() - started) / 1000);
    switch (outcome.kind) {
      case 'granted':
        // the grant as its event carried it; the session's ttl is fixed for its lifetime
        return this.confirmGrant({ name, sessionId, fencingToken: outcome.fencingToken, ttlMs: s.ttlMs, ...(outcome.mode === 'shared' ? { mode: 'shared' as const } : {}) }, arrival);
      case 'cancelled':
        return refused(lockHeldError(name, outcome.holder));
      case 'session_ended':
        return refused(sessionNotFound(sessionId));
      case 'aborted':
        // the client went away and gave its place up (awaitGrant); the cancel may lose to a
        // grant, so the answer — if anyone still hears it, e.g. a relaying follower — is
        // "outcome unknown", never 503
        return refused(new Failure('timeout', 'the request was aborted while the acquire was queued; the wait is committed and may still be granted: retry with the same Idempotency-Key, or release the lock in this session'));
      case 'shutdown':
        return refused(new Failure('timeout', 'the node is shutting down while the acquire was queued; the wait is committed and the next leader may grant it: retry with the same Idempotency-Key, or release the lock in this session'));
      case 'unknown':
        return refused(new Failure('timeout', 'leadership changed while waiting; retry with the same Idempotency-Key to find your place or your grant'));
    }
  }
}
