// LockService on a real node: the REST contract (spec §3) implemented with the Raft
// driver, the lock FSM and the lessor. Writes go through the log (propose → commit →
// apply); keepalives, renews and linearizable reads go through a ReadIndex quorum round
// that starts after the request arrived (spec "TTL semantics").
import { randomBytes } from 'node:crypto';
import type { ApplyOutput, ApplyResult, Command, FsmEvent, HolderInfo, LimitName, LockInfo, NewSessionSpec } from '../lock-fsm/index.js';
import { InvalidCommandError, isSessionId, parseEnvelope, type Lessor } from '../lock-fsm/index.js';
import { ApiError } from '../api/errors.js';
import type { ClusterView, GrantView, HolderView, LeaderOp, LockService, LockView, RequestContext, RevokedView, Routing, SessionView } from '../api/service.js';
import type { RaftDriver, ProposalOutcome } from '../raft/driver.js';
import type { Metrics } from '../metrics.js';
import type { SessionConfig } from '../config.js';
import { encodeCommand } from './command-codec.js';
import type { LockApp } from './lock-app.js';
import { WaitRegistry, type WaitOutcome } from './wait-registry.js';
import { LessorProposer } from './lessor-proposer.js';
import { LogClock } from './log-clock.js';
import { HoldTimer } from './hold-timer.js';
import { SemaphoreService } from './semaphore-service.js';
import { ElectionService } from './election-service.js';
import type { Membership } from './membership.js';
import type { ClusterOps } from './cluster-ops.js';

export interface ServiceDeps {
  nodeId: string;
  driver: RaftDriver<ApplyOutput>;
  app: LockApp;
  lessor: Lessor;
  metrics: Metrics;
  session: SessionConfig;
  membership: Membership;
  /** GET /v1/cluster, member changes, leadership transfer (docs/membership.md) */
  clusterOps: ClusterOps;
  /** monotonic ms (deadlines, and the log time entries are stamped with: log-clock.ts) */
  nowMs(): number;
  /** how long a read barrier may take before 504 */
  readTimeoutMs: number;
  /** longest election timeout, for waiting on a leadership transfer */
  electionTimeoutMaxMs: number;
  /** the driver's proposal timeout (default 5000), for the leader-side budgets */
  proposalTimeoutMs?: number;
  /** issue 10: may this principal act on sessions other principals opened (its token
   *  has `admin` on the lock name; with no name, on every name)? Absent: auth is off. */
  mayActForOthers?: (principal: string, name: string | undefined) => boolean;
}

/** 128 random bits drawn by the leader: session ids are capabilities (issue 10). */
export function newSessionId(): string {
  return randomBytes(16).toString('hex');
}

export class RaftLockService implements LockService {
  /** @internal (also semaphore-service.ts) */
  readonly waits = new WaitRegistry();
  /** @internal */
  readonly lessorProposer = new LessorProposer((cmd) => this.d.driver.propose(encodeCommand({ atMs: this.logClock.stamp(), cmd })));
  /** stamps every proposal's atMs: never this node's wall clock (docs/lock-fsm.md "Log time") */
  readonly logClock: LogClock;

  /** semaphores (docs/contract.md §4 "Semaphores") */
  readonly semaphores: SemaphoreService;
  /** raftlock_lock_hold_seconds (hold-timer.ts) */
  readonly holdTimer: HoldTimer;
  /** leader election (docs/contract.md §4 "Leader election") */
  readonly elections: ElectionService;

  constructor(readonly d: ServiceDeps) {
    this.semaphores = new SemaphoreService(this);
    this.elections = new ElectionService(this);
    this.holdTimer = new HoldTimer(d.metrics);
    this.logClock = new LogClock({ monoMs: () => d.nowMs(), appliedLogTimeMs: () => d.app.fsm.logTimeMs });
  }

  // ---- routing and health ----------------------------------------------------------

  routing(): Routing {
    // a removed node takes no part any more: it neither serves nor relays (clients fail over)
    if (this.d.membership.selfState() === 'removed') throw new ApiError('unavailable', this.d.membership.notReadyReason() ?? 'removed');
    const leader = this.d.driver.currentLeader;
    return { isLeader: this.d.driver.currentRole === 'leader', leaderApi: leader ? this.d.membership.address(leader)?.api ?? null : null };
  }

  ready(): boolean {
    const st = this.d.driver.status();
    return st.leader !== null && this.d.driver.appliedIndex >= st.commit && this.d.membership.notReadyReason() === null;
  }

  notReadyReason(): string | null {
    return this.d.membership.notReadyReason();
  }

  // ---- events from the driver ------------------------------------------------------

  /** every applied entry's output, in log order (driver hook) */
  onApplied(out: ApplyOutput | undefined): void {
    if (!out) return;
    this.holdTimer.onApplied(out, this.d.app.fsm, this.d.nowMs());
    if (out.events.length === 0) return;
    this.d.lessor.observe(out.events, this.d.nowMs());
    for (const e of out.events) this.waits.onEvent(e, (name) => this.holderOf(name));
  }

  onRoleChange(isLeader: boolean): void {
    if (isLeader) {
      this.logClock.takeOffice();
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
    const fsm = this.d.app.fsm;
    this.lessorProposer.proposeDue(this.d.lessor.due(now, (target, name, sid, token) => fsm.holdsGrant(target, name, sid, token)));
  }

  /** graceful shutdown: every waiting request is answered. Not with 503: each of those
   *  acquires is a committed entry whose wait the next leader re-arms (docs/api.md "Errors"). */
  shutdown(): void {
    this.waits.abortAll({ kind: 'shutdown' });
  }

  // ---- sessions --------------------------------------------------------------------

  async openSession(p: { ttlMs?: number; owner?: string; lockDelayMs?: number }, ctx: RequestContext): Promise<{ session_id: string; ttl_ms: number }> {
    const ttlMs = p.ttlMs ?? this.d.session.defaultTtlMs;
    for (let attempt = 0; attempt < 3; attempt++) {
      const cmd: Command = { kind: 'openSession', sessionId: newSessionId(), ttlMs, owner: p.owner ?? '', lockDelayMs: p.lockDelayMs ?? this.d.session.lockDelayMs };
      if (ctx.principal !== undefined) cmd.principal = ctx.principal;
      const r = await this.submit(cmd, ctx);
      if (r.ok && r.kind === 'session_opened') return { session_id: r.sessionId, ttl_ms: r.ttlMs };
      if (!r.ok && r.code === 'session_exists') continue; // 128-bit collision: draw again
      throw resultError(r);
    }
    throw new ApiError('unavailable', 'could not draw a fresh session id');
  }

  async keepalive(sessionId: string, ctx: RequestContext): Promise<{ session_id: string; ttl_ms: number }> {
    const arrival = this.d.nowMs();
    await this.readBarrier(ctx);
    const s = this.liveSession(sessionId);
    this.checkOwner(s.principal, ctx, undefined);
    this.renewLease(sessionId, arrival, 'unavailable');
    return { session_id: s.sessionId, ttl_ms: s.ttlMs };
  }

  async getSession(sessionId: string, ctx: RequestContext): Promise<SessionView> {
    await this.readBarrier(ctx);
    const s = this.liveSession(sessionId);
    return { session_id: s.sessionId, owner: s.owner, ttl_ms: s.ttlMs, locks: s.locks };
  }

  async closeSession(sessionId: string, ctx: RequestContext): Promise<{ released: string[] }> {
    if (!isSessionId(sessionId)) throw sessionNotFound(sessionId);
    const cmd: Command = { kind: 'closeSession', sessionId };
    const actor = this.actor(ctx, undefined);
    if (actor !== undefined) cmd.actor = actor;
    const r = await this.submit(cmd, ctx);
    if (r.ok && r.kind === 'session_closed') return { released: r.released };
    throw resultError(r);
  }

  // ---- locks -----------------------------------------------------------------------

  async acquire(name: string, p: { sessionId?: string; ttlMs?: number; waitMs: number; owner?: string; mode?: 'exclusive' | 'shared'; maxHoldMs?: number }, ctx: RequestContext): Promise<GrantView> {
    const arrival = this.d.nowMs();
    let cmd: Command;
    if (p.sessionId === undefined) {
      const newSession: NewSessionSpec = { ttlMs: p.ttlMs ?? this.d.session.defaultTtlMs, owner: p.owner ?? '', lockDelayMs: this.d.session.lockDelayMs };
      if (ctx.principal !== undefined) newSession.principal = ctx.principal;
      cmd = { kind: 'acquire', name, sessionId: newSessionId(), waitMs: p.waitMs, newSession };
    } else {
      if (!isSessionId(p.sessionId)) throw sessionNotFound(p.sessionId);
      cmd = { kind: 'acquire', name, sessionId: p.sessionId, waitMs: p.waitMs };
      const actor = this.actor(ctx, name);
      if (actor !== undefined) cmd.actor = actor;
    }
    if (p.owner !== undefined) cmd.owner = p.owner;
    if (p.mode === 'shared') cmd.mode = 'shared';
    if (p.maxHoldMs !== undefined) cmd.maxHoldMs = p.maxHoldMs;
    let out: ApplyOutput;
    try {
      out = await this.submitOutput(cmd, ctx);
    } catch (err) {
      this.d.metrics.lockAcquire.inc({ result: err instanceof ApiError && err.code === 'timeout' ? 'timeout' : 'error' });
      throw err;
    }
    const r = out.result;
    if (r.ok && r.kind === 'acquired') {
      if (out.replayed) return this.replayedGrant(name, r, arrival);
      return this.confirmGrant(name, r.sessionId, r.fencingToken, arrival, 'acquired');
    }
    if (r.ok && r.kind === 'queued') {
      this.d.metrics.lockAcquire.inc({ result: 'queued' });
      return this.waitForGrant(name, r.sessionId, p.waitMs, arrival, ctx);
    }
    this.d.metrics.lockAcquire.inc({ result: !r.ok && r.code === 'lock_held' ? 'lock_held' : !r.ok && r.code === 'session_not_found' ? 'session_not_found' : 'error' });
    throw resultError(r);
  }

  async renew(name: string, sessionId: string, ctx: RequestContext): Promise<GrantView> {
    const arrival = this.d.nowMs();
    await this.readBarrier(ctx);
    const s = this.liveSession(sessionId);
    this.checkOwner(s.principal, ctx, name);
    const h = grantOf(this.d.app.fsm.getLock(name), sessionId);
    if (!h) throw new ApiError('not_holder', `session ${sessionId} does not hold lock ${name}`);
    this.renewLease(sessionId, arrival, 'unavailable');
    return grantView(name, sessionId, h.fencingToken, s.ttlMs, h.mode);
  }

  async release(name: string, sessionId: string, fencingToken: number | undefined, ctx: RequestContext): Promise<{ name: string; released: true }> {
    if (!isSessionId(sessionId)) throw sessionNotFound(sessionId);
    const cmd: Command = { kind: 'release', name, sessionId };
    if (fencingToken !== undefined) cmd.fencingToken = fencingToken;
    const actor = this.actor(ctx, name);
    if (actor !== undefined) cmd.actor = actor;
    const out = await this.submitOutput(cmd, ctx);
    const r = out.result;
    if (r.ok && r.kind === 'released') return { name, released: true };
    if (!r.ok && r.code === 'not_holder' && fencingToken === undefined && (await this.withdrawWait(name, sessionId, ctx, out.replayed === true))) return { name, released: true };
    throw resultError(r);
  }

  /** revoke (the route checked `admin` on the name): docs/contract.md §4 "Revocation and maximum hold" */
  async revoke(name: string, sessionId: string | undefined, ctx: RequestContext): Promise<RevokedView> {
    return this.revokeGrants('lock', name, sessionId, ctx);
  }

  /** @internal (also semaphore-service.ts) */
  async revokeGrants(target: 'lock' | 'semaphore', name: string, sessionId: string | undefined, ctx: RequestContext): Promise<RevokedView> {
    if (sessionId !== undefined && !isSessionId(sessionId)) throw sessionNotFound(sessionId);
    const r = await this.submit(sessionId === undefined ? { kind: 'revoke', target, name } : { kind: 'revoke', target, name, sessionId }, ctx);
    if (r.ok && r.kind === 'revoked') return { name, revoked: r.revoked.map((g) => ({ session_id: g.sessionId, fencing_token: g.fencingToken })) };
    if (!r.ok && r.code === 'not_holder') throw new ApiError('not_holder', `session ${sessionId ?? ''} holds no grant of ${target} ${name}`);
    throw resultError(r);
  }

  async getLock(name: string, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<LockView> {
    if (consistency === 'linearizable') await this.readBarrier(ctx);
    return lockView(this.d.app.fsm.getLock(name));
  }

  async listLocks(prefix: string, limit: number, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<LockView[]> {
    if (consistency === 'linearizable') await this.readBarrier(ctx);
    return this.d.app.fsm.listLocks(prefix, limit).map(lockView);
  }

  async checkToken(name: string, fencingToken: number, ctx: RequestContext): Promise<{ name: string; current: boolean }> {
    await this.readBarrier(ctx);
    return { name, current: this.d.app.fsm.check(name, fencingToken) };
  }

  // ---- cluster ---------------------------------------------------------------------

  cluster(): ClusterView {
    return this.d.clusterOps.view();
  }

  addMember(m: { id: string; api: string; peer: string; learner?: boolean }, ctx: RequestContext): Promise<ClusterView> {
    return this.d.clusterOps.add(m, ctx);
  }

  promoteMember(id: string, ctx: RequestContext): Promise<ClusterView> {
    return this.d.clusterOps.promote(id, ctx);
  }

  removeMember(id: string, ctx: RequestContext): Promise<ClusterView> {
    return this.d.clusterOps.remove(id, ctx);
  }

  transferLeadership(to: string | undefined, ctx: RequestContext): Promise<{ leader_id: string }> {
    return this.d.clusterOps.transfer(to, ctx);
  }

  /** The longest `op` takes here as the leader (a follower's relay waits that long). */
  leaderBudgetMs(op: LeaderOp, waitMs: number): number {
    if (op !== 'acquire') return this.d.clusterOps.leaderBudgetMs(op);
    // propose; wait up to the backstop past wait_ms; possibly ask again once (waitForGrant)
    return 2 * (this.d.proposalTimeoutMs ?? 5000) + this.d.readTimeoutMs + waitMs + this.waitBackstopMs();
  }

  /** the registry's own end of a wait, past wait_ms: the lessor's cancelWait normally ends it first */
  private waitBackstopMs(): number {
    return Math.max(5000, this.d.electionTimeoutMaxMs);
  }

  // ---- internals ---------------------------------------------------------------------

  /** The principal the FSM must match against the session's opener, or undefined when
   *  auth is off or the caller's token has `admin` over `name` (issue 10). */
  /** @internal (also semaphore-service.ts) */
  actor(ctx: RequestContext, name: string | undefined): string | undefined {
    const p = ctx.principal;
    if (p === undefined || !this.d.mayActForOthers || this.d.mayActForOthers(p, name)) return undefined;
    return p;
  }

  /** keepalive/renew are not logged: the same ownership rule, checked on applied state
   *  after the read barrier (so the session is as current as the barrier's index). */
  private checkOwner(sessionPrincipal: string | undefined, ctx: RequestContext, name: string | undefined): void {
    const actor = this.actor(ctx, name);
    if (actor !== undefined && actor !== (sessionPrincipal ?? '')) throw permissionDenied();
  }

  private requireLeader(): void {
    if (this.d.driver.currentRole !== 'leader') throw new ApiError('unavailable', 'this node is not the leader');
  }

  /**
   * A release (without a fencing token) by a session that does not hold `name` but waits
   * for it withdraws that wait, so that a client cleaning up after an acquire it gave up on
   * cannot be granted the lock later (docs/api.md "Release", docs/client.md). If the grant
   * wins the race against the cancel, the lock is released after all: returns true (the
   * answer is then 200 released). The release was applied first, so its permission check
   * (actor) already passed for this session.
   */
  /**
   * A release without a token by a session that is not the holder withdraws its wait; if
   * the grant won the race (the session holds the lock now), the lock is released (200).
   * Only for the attempt whose release command applied first (`replayed` false): right
   * after it, the state says whether that release met a wait or a grant that followed it.
   * A retry with the same Idempotency-Key (`replayed`) changes nothing and answers the
   * stored result: by the time a late copy arrives, the session may hold a later grant or
   * wait for it, which the client asked for after the first answer. jepsen-lite (seed
   * 5151) caught a retry that ran the withdrawal again and released such a grant.
   * If the first attempt's withdrawal released a grant (200) and that answer was lost, the
   * retry answers 200 too: the withdrawal's release names the client's key (`settles`), and
   * the state machine makes that key's stored answer the release.
   */
  private async withdrawWait(name: string, sessionId: string, ctx: RequestContext, replayed: boolean): Promise<boolean> {
    if (replayed) return false;
    const waits = this.d.app.fsm.getSession(sessionId)?.waiting.includes(name) === true;
    // granted between the release's commit and now: the grant is this session's to undo
    if (!waits && grantOf(this.d.app.fsm.getLock(name), sessionId) === undefined) return false;
    const inner: RequestContext = { signal: ctx.signal, ...(ctx.principal !== undefined ? { principal: ctx.principal } : {}) };
    const c = await this.submit({ kind: 'cancelWait', name, sessionId }, inner);
    if (!(c.ok && c.kind === 'acquired')) return false;
    const again: Command = { kind: 'release', name, sessionId };
    const actor = this.actor(ctx, name);
    if (actor !== undefined) again.actor = actor;
    // the client's key then answers this release, not the first attempt's not_holder
    if (ctx.idempotencyKey !== undefined) again.settles = ctx.idempotencyKey;
    const r = await this.submit(again, inner);
    return r.ok && r.kind === 'released';
  }

  /** Propose one command and wait for it to apply; map the driver's outcome to errors. */
  private async submit(cmd: Command, ctx: RequestContext): Promise<ApplyResult> {
    return (await this.submitOutput(cmd, ctx)).result;
  }

  /** submit, keeping whether the answer is a stored first answer (ApplyOutput.replayed) */
  /** @internal (also semaphore-service.ts) */
  async submitOutput(cmd: Command, ctx: RequestContext): Promise<ApplyOutput> {
    this.requireLeader();
    const env = { atMs: this.logClock.stamp(), cmd, ...(ctx.idempotencyKey !== undefined ? { idempotencyKey: ctx.idempotencyKey } : {}) };
    try {
      parseEnvelope(env); // what apply() will accept; refuse here rather than log a no-op
    } catch (err) {
      if (err instanceof InvalidCommandError) throw new ApiError('invalid_request', err.message);
      throw err;
    }
    const out = await this.d.driver.propose(encodeCommand(env));
    return this.proposalResult(out);
  }

  private proposalResult(out: ProposalOutcome<ApplyOutput>): ApplyOutput {
    const m = this.d.metrics;
    if (out.ok) {
      m.proposal('committed');
      return out.result;
    }
    switch (out.kind) {
      case 'rejected':
        m.proposal(out.reason === 'not_leader' ? 'not_leader' : 'dropped');
        if (out.reason === 'overloaded') throw new ApiError('too_many_requests', 'too many proposals in flight on the leader');
        throw new ApiError('unavailable', `the proposal was refused (${out.reason}); nothing was applied`);
      case 'lost':
        m.proposal('lost');
        throw new ApiError('unavailable', 'leadership changed before the command committed; nothing was applied');
      case 'unknown':
        m.proposal('timeout');
        throw new ApiError('timeout', 'the command was proposed but is not known to be committed; retry with the same Idempotency-Key');
    }
  }

  /** ReadIndex: leadership confirmed by a quorum round that began after the request, and
   *  this node has applied through the read index. */
  /** @internal (also semaphore-service.ts) */
  async readBarrier(_ctx: RequestContext): Promise<void> {
    this.requireLeader();
    const r = await this.d.driver.readIndex(this.d.readTimeoutMs);
    if (r.ok) return;
    if (r.reason === 'timeout') throw new ApiError('timeout', 'could not confirm leadership with a quorum in time');
    throw new ApiError('unavailable', 'this node is no longer the leader');
  }

  private liveSession(sessionId: string) {
    const s = isSessionId(sessionId) ? this.d.app.fsm.getSession(sessionId) : undefined;
    if (!s) throw sessionNotFound(sessionId);
    return s;
  }

  private holderOf(name: string): HolderInfo | undefined {
    return this.d.app.fsm.getLock(name).holder;
  }

  /**
   * Renew the session's lease from the request's arrival. Only the leader's lessor can; a
   * node that lost leadership since the request arrived (its proposal was committed by the
   * next leader, or leadership went during the read barrier) must not answer
   * session_not_found — the session may be alive and well — but: for a keepalive or renew,
   * 503 (nothing was renewed; retry); for a grant, 504 (it was applied; retry with the same
   * Idempotency-Key and the leader answers it with the lease renewed). Found by jepsen-lite.
   */
  /** @internal (also semaphore-service.ts) */
  renewLease(sessionId: string, arrival: number, onLostLeadership: 'unavailable' | 'timeout'): void {
    if (!this.d.lessor.isLeader) {
      throw new ApiError(
        onLostLeadership,
        onLostLeadership === 'timeout'
          ? 'leadership changed before the lease could be renewed; the command was applied: retry with the same Idempotency-Key'
          : 'this node stopped leading before the lease could be renewed; nothing was renewed, retry',
      );
    }
    if (!this.d.lessor.renew(sessionId, arrival)) throw sessionNotFound(sessionId);
  }

  /**
   * The FSM said `sessionId` was granted `name` with `token` (now, or as the stored answer
   * of an idempotent retry). Answer with the grant only if it still stands and the
   * session's lease could be renewed from this request's arrival; otherwise say what is
   * true now.
   */
  private confirmGrant(name: string, sessionId: string, token: number, arrival: number, result: 'acquired'): GrantView {
    const s = this.d.app.fsm.getSession(sessionId);
    const l = this.d.app.fsm.getLock(name);
    if (!s) {
      this.d.metrics.lockAcquire.inc({ result: 'session_not_found' });
      throw sessionNotFound(sessionId);
    }
    const h = grantOf(l, sessionId);
    if (!h || h.fencingToken !== token) {
      this.d.metrics.lockAcquire.inc({ result: 'lock_held' });
      throw lockHeldError(name, l.holder);
    }
    try {
      this.renewLease(sessionId, arrival, 'timeout');
    } catch (err) {
      this.d.metrics.lockAcquire.inc({ result: err instanceof ApiError && err.code === 'timeout' ? 'timeout' : 'session_not_found' });
      throw err;
    }
    this.d.metrics.lockAcquire.inc({ result });
    return grantView(name, sessionId, token, s.ttlMs, h.mode);
  }

  /**
   * A retry (same Idempotency-Key) of an acquire that was granted: the answer is the first
   * one, token and all, whatever happened since (docs/contract.md "Idempotency"). While
   * that grant still stands this is a retry after an unknown outcome, and the lease is
   * renewed from this request as for a fresh grant; once it is gone (released, expired,
   * taken by another session) nothing is renewed or re-checked: the lock's state is not
   * this request's answer, and the token fences any use of the old grant.
   */
  private replayedGrant(name: string, r: Extract<ApplyResult, { kind: 'acquired' }>, arrival: number): GrantView {
    const h = grantOf(this.d.app.fsm.getLock(name), r.sessionId);
    if (h && h.fencingToken === r.fencingToken) {
      return this.confirmGrant(name, r.sessionId, r.fencingToken, arrival, 'acquired');
    }
    this.d.metrics.lockAcquire.inc({ result: 'acquired' });
    return grantView(name, r.sessionId, r.fencingToken, r.ttlMs, r.mode === 'shared' ? 'shared' : 'exclusive');
  }

  private async waitForGrant(name: string, sessionId: string, waitMs: number, arrival: number, ctx: RequestContext, asked = false): Promise<GrantView> {
    const fsm = this.d.app.fsm;
    // The state may have moved on since the 'queued' answer (or this is a retry).
    const held = fsm.getLock(name).holder;
    const mine = grantOf(fsm.getLock(name), sessionId);
    if (mine) return this.confirmGrant(name, sessionId, mine.fencingToken, arrival, 'acquired');
    // The 'queued' answer can reach a node that has lost leadership since it proposed (the
    // next leader committed the entry): only the leader may wait, renew and cancel.
    if (!this.d.lessor.isLeader) {
      this.d.metrics.lockAcquire.inc({ result: 'timeout' });
      throw new ApiError('timeout', 'leadership changed while the acquire was queued; retry with the same Idempotency-Key to find your place or your grant');
    }
    const s = fsm.getSession(sessionId);
    if (!s) throw sessionNotFound(sessionId);
    if (!s.waiting.includes(name)) {
      // Typically a retry (same Idempotency-Key) whose first attempt queued and whose wait
      // then ended unheard: its connection died — e.g. the follower relaying it crashed —
      // and 'aborted' below gave the place up. Answering the stored 'queued' with 409 would
      // report a wait that never ran out (issue 9: seen when a member is killed under
      // load). Ask again, once, as a new wait: the FSM's acquire is idempotent for a
      // session that holds or waits for the lock, so this needs no key of its own.
      if (asked) throw lockHeldError(name, held);
      const again: Command = { kind: 'acquire', name, sessionId, waitMs };
      const actor = this.actor(ctx, name);
      if (actor !== undefined) again.actor = actor;
      const r = await this.submit(again, { signal: ctx.signal, ...(ctx.principal !== undefined ? { principal: ctx.principal } : {}) });
      if (r.ok && r.kind === 'acquired') return this.confirmGrant(name, r.sessionId, r.fencingToken, arrival, 'acquired');
      if (r.ok && r.kind === 'queued') return this.waitForGrant(name, sessionId, waitMs, arrival, ctx, true);
      throw resultError(r);
    }

    // the wait's identity: the cancelWait that ends it names it, so no other wait of this
    // session on this lock can be ended by it (docs/lock-fsm.md)
    const since = fsm.waitOf(name, sessionId)?.since ?? 0;
    this.d.lessor.trackWait(name, sessionId, arrival + waitMs, since);
    const started = this.d.nowMs();
    // Backstop: the lessor's cancelWait normally ends the wait at arrival + waitMs.
    const outcome: WaitOutcome = await this.waits.wait(name, sessionId, waitMs + this.waitBackstopMs(), ctx.signal);
    this.d.metrics.lockWait.observe((this.d.nowMs() - started) / 1000);
    switch (outcome.kind) {
      case 'granted':
        return this.confirmGrant(name, sessionId, outcome.fencingToken, arrival, 'acquired');
      case 'cancelled':
        this.d.metrics.lockAcquire.inc({ result: 'lock_held' });
        throw lockHeldError(name, outcome.holder);
      case 'session_ended':
        throw sessionNotFound(sessionId);
      case 'aborted':
        // the client went away: give the place up so the lock is not granted to nobody. The
        // cancel may lose to a grant (or never commit), so the answer — if anyone still
        // hears it, e.g. a relaying follower — is "outcome unknown", never 503.
        if (this.d.driver.currentRole === 'leader') {
          const cancel: Command = since === 0 ? { kind: 'cancelWait', name, sessionId } : { kind: 'cancelWait', name, sessionId, since };
          void this.d.driver.propose(encodeCommand({ atMs: this.logClock.stamp(), cmd: cancel }));
        }
        this.d.metrics.lockAcquire.inc({ result: 'timeout' });
        throw new ApiError('timeout', 'the request was aborted while the acquire was queued; the wait is committed and may still be granted: retry with the same Idempotency-Key, or release the lock in this session');
      case 'shutdown':
        this.d.metrics.lockAcquire.inc({ result: 'timeout' });
        throw new ApiError('timeout', 'the node is shutting down while the acquire was queued; the wait is committed and the next leader may grant it: retry with the same Idempotency-Key, or release the lock in this session');
      case 'unknown':
        this.d.metrics.lockAcquire.inc({ result: 'timeout' });
        throw new ApiError('timeout', 'leadership changed while waiting; retry with the same Idempotency-Key to find your place or your grant');
    }
  }
}

function holderView(h: HolderInfo): HolderView {
  return { session_id: h.sessionId, owner: h.owner, fencing_token: h.fencingToken };
}

function lockView(l: LockInfo): LockView {
  const v: LockView = { name: l.name, held: l.held, waiters: l.waiters };
  if (l.holder) v.holder = holderView(l.holder);
  if (l.mode) v.mode = l.mode;
  if (l.holders) v.holders = l.holders.map((h) => ({ ...holderView(h), mode: h.mode }));
  return v;
}

/** the session's grant of the lock, in either mode */
function grantOf(l: LockInfo, sessionId: string): { fencingToken: number; mode: 'exclusive' | 'shared' } | undefined {
  return l.holders?.find((h) => h.sessionId === sessionId);
}

function grantView(name: string, sessionId: string, token: number, ttlMs: number, mode: 'exclusive' | 'shared'): GrantView {
  const g: GrantView = { name, session_id: sessionId, fencing_token: token, ttl_ms: ttlMs };
  if (mode === 'shared') g.mode = 'shared';
  return g;
}

export function sessionNotFound(id: string): ApiError {
  return new ApiError('session_not_found', `session ${id.length > 64 ? id.slice(0, 64) + '…' : id} is unknown or expired`);
}

function lockHeldError(name: string, holder: HolderInfo | undefined): ApiError {
  if (!holder) return new ApiError('lock_held', `lock ${name} is in lock-delay after its holder's session expired`);
  return new ApiError('lock_held', `lock ${name} is held by session ${holder.sessionId}`, { details: { holder: holderView(holder) } });
}

export function resultError(r: ApplyResult): ApiError {
  if (r.ok) return new ApiError('internal', `unexpected result ${r.kind}`);
  switch (r.code) {
    case 'lock_held':
      return new ApiError('lock_held', r.holder ? `the lock is held by session ${r.holder.sessionId}` : 'the lock is in lock-delay', r.holder ? { details: { holder: holderView(r.holder) } } : {});
    case 'not_holder':
      return new ApiError('not_holder', 'the session does not hold the lock, or the fencing token is stale');
    case 'session_not_found':
      return new ApiError('session_not_found', 'unknown or expired session');
    case 'session_exists':
      return new ApiError('unavailable', 'session id collision; retry');
    case 'permission_denied':
      return permissionDenied();
    case 'too_many_requests':
      return new ApiError('too_many_requests', LIMIT_MESSAGES[r.limit], { retryAfterS: 1 });
    case 'limit_mismatch':
      return new ApiError('limit_mismatch', `the semaphore's limit is ${r.limit}`, { details: { limit: r.limit } });
    case 'semaphore_full':
      return new ApiError('semaphore_full', `the semaphore has ${r.inUse} of ${r.limit} permits in use`, { details: { in_use: r.inUse, limit: r.limit } });
  }
}

const LIMIT_MESSAGES: Record<LimitName, string> = {
  sessions: 'the cluster-wide session limit (limits.max_sessions) is reached',
  waiters: 'the lock has too many waiters (limits.max_waiters_per_lock)',
  sessions_per_token: 'this token has too many open sessions (limits.max_sessions_per_token)',
  locks: 'the cluster-wide lock limit (limits.max_locks) is reached',
};

function permissionDenied(): ApiError {
  return new ApiError('permission_denied', 'the session was opened by another token; acting on it needs the admin right');
}

export type { FsmEvent };
