// Semaphores on a real node (docs/contract.md §4 "Semaphores"): the same flow as a lock
// acquire in lock-service.ts — propose, and on a grant renew the lease from the request's
// arrival; on 'sem_queued' wait for the FSM's semGranted / semWaitEnded events, with the
// lessor timing the wait out by semCancelWait (docs/lock-fsm.md "Semaphores").
import { assert } from '../../assert.js';
import type { ApplyResult, Command, SemaphoreInfo, SessionInfo } from '../../lock-fsm/index.js';
import { isSessionId } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { RequestContext } from '../../api/service.js';
import type { RevokedView, SemaphoreGrantView, SemaphoreView } from '../../api/service.js';
import type { LeaderLog } from '../leader/leader-log.js';
import type { LeaderCoordinator } from '../leader/leader-coordinator.js';
import { asActor, requester } from './requester.js';
import { endedWaitAnswer, settledWait } from './ended-wait.js';
import { withHold } from '../../api/lock-views.js';
import { revokeGrants } from './revoke.js';
import { grantEndedBeforeAnswer, resultError, sessionNotFound } from '../../api/result-errors.js';
import type { ServiceDeps } from '../leader/service-deps.js';
import { ok, refused, settled, type Result } from '../../api/service-result.js';

export interface SemaphoreAcquire { sessionId?: string; ttlMs?: number; limit: number; permits: number; waitMs: number; owner?: string; maxHoldMs?: number }

/** a semaphore grant as the state machine made it: an apply's `sem_acquired` result, or a
 *  waiter's `semGranted` event with its session's ttl. The answer is built from it alone. */
type SemGranted = Pick<Extract<ApplyResult, { kind: 'sem_acquired' }>, 'name' | 'sessionId' | 'permits' | 'limit' | 'fencingToken' | 'ttlMs'>;

export class SemaphoreService {
  constructor(private readonly d: ServiceDeps, private readonly log: LeaderLog, private readonly leader: LeaderCoordinator) {}

  acquire(name: string, p: SemaphoreAcquire, ctx: RequestContext): Promise<Result<SemaphoreGrantView>> {
    return settled(() => this.acquireGrant(name, p, ctx));
  }

  private async acquireGrant(name: string, p: SemaphoreAcquire, ctx: RequestContext): Promise<Result<SemaphoreGrantView>> {
    const arrival = this.d.nowMs();
    const who = requester(this.d, p, ctx, name);
    if (!who.ok) return who;
    const { sessionId, ...rest } = who.value;
    const cmd: Command = { kind: 'semAcquire', name, sessionId, limit: p.limit, permits: p.permits, waitMs: p.waitMs, ...rest };
    if (p.owner !== undefined) cmd.owner = p.owner;
    if (p.maxHoldMs !== undefined) cmd.maxHoldMs = p.maxHoldMs;
    // the request as sent (no default ttl, no drawn session id; not wait_ms: leader/request-digest.ts)
    const request = { op: 'semaphore.acquire', name, body: { session_id: p.sessionId, ttl_ms: p.ttlMs, limit: p.limit, permits: p.permits, owner: p.owner, max_hold_ms: p.maxHoldMs } };
    const out = await this.log.submitOutput(cmd, ctx, request);
    // answered from the applied result: its name, session, permits, limit and token
    const r = out.result;
    if (r.ok && r.kind === 'sem_acquired') {
      // a replayed grant that is gone since answers as stored (as for locks)
      if (out.replayed && !this.d.app.fsm.holdsGrant('semaphore', r.name, r.sessionId, r.fencingToken)) return ok(grantView(r));
      return this.confirm(r, arrival);
    }
    if (r.ok && r.kind === 'sem_queued') return this.waitForGrant(r.name, r.sessionId, p.waitMs, arrival, ctx);
    return refused(resultError(r));
  }

  /** A release by a session that holds no permits but waits for them withdraws that wait,
   *  as a lock release does (LeaderCoordinator.withdrawWait, docs/api.md "Release"). */
  release(name: string, sessionId: string, ctx: RequestContext): Promise<Result<{ name: string; released: true }>> {
    return settled(async () => {
      if (!isSessionId(sessionId)) return refused(sessionNotFound(sessionId));
      const cmd = asActor(this.d, { kind: 'semRelease' as const, name, sessionId }, ctx, name);
      const out = await this.log.submitOutput(cmd, ctx, { op: 'semaphore.release', name, body: { session_id: sessionId } });
      const r = out.result;
      if (r.ok && r.kind === 'sem_released') return ok({ name: r.name, released: true as const });
      if (!r.ok && r.code === 'not_holder') {
        if (await this.leader.withdrawWait(cmd, this.withdrawal(name, sessionId), out.replayed === true, ctx)) return ok({ name, released: true as const });
        return refused(new Failure('not_holder', `session ${sessionId} holds no permits of semaphore ${name}`));
      }
      return refused(resultError(r));
    });
  }

  /** revoke (the route checked `admin` on the name) */
  revoke(name: string, sessionId: string | undefined, ctx: RequestContext): Promise<Result<RevokedView>> {
    return revokeGrants(this.log, 'semaphore', name, sessionId, ctx);
  }

  setLimit(name: string, limit: number, ctx: RequestContext): Promise<Result<{ name: string; limit: number }>> {
    return settled(async () => {
      const r = await this.log.submit({ kind: 'semSetLimit', name, limit }, ctx, { op: 'semaphore.limit', name, body: { limit } });
      if (r.ok && r.kind === 'sem_limit') return ok({ name: r.name, limit: r.limit });
      return refused(resultError(r));
    });
  }

  get(name: string, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<Result<SemaphoreView>> {
    return settled(async () => ok(await this.log.read(consistency, () => semaphoreView(this.d.app.fsm.getSemaphore(name)))));
  }

  list(prefix: string, limit: number, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<Result<SemaphoreView[]>> {
    return settled(async () => ok(await this.log.read(consistency, () => this.d.app.fsm.listSemaphores(prefix, limit).map(semaphoreView))));
  }

  /** the session's wait for permits, named by its `since`: a newer wait is left alone */
  private withdrawal(name: string, sessionId: string): Command | undefined {
    const wait = this.d.app.fsm.semWaitOf(name, sessionId);
    return wait === undefined ? undefined : { kind: 'semCancelWait', name, sessionId, since: wait.since };
  }

  /**
   * The FSM granted `g` (now, or to a request that waited). Answer with the grant only if
   * it still stands — later entries of the same committed batch may have ended it — and the
   * lease could be renewed from this request's arrival; otherwise say what is true now. One
   * look into the state machine (holdsGrant); the answer itself is the apply's (as for locks:
   * lock-service.ts confirmGrant).
   */
  private confirm(g: SemGranted, arrival: number): Result<SemaphoreGrantView> {
    const fsm = this.d.app.fsm;
    if (!fsm.holdsGrant('semaphore', g.name, g.sessionId, g.fencingToken)) {
      // a grant never outlives its session: an ended session is the truer answer
      if (!fsm.getSession(g.sessionId)) return refused(sessionNotFound(g.sessionId));
      return refused(grantEndedBeforeAnswer(`semaphore ${g.name}`, full(fsm.getSemaphore(g.name))));
    }
    this.leader.renewLease(g.sessionId, arrival, 'timeout');
    return ok(withHold(grantView(g), fsm.holdLeftMs('semaphore', g.name, g.sessionId, g.fencingToken)));
  }

  private async waitForGrant(name: string, sessionId: string, waitMs: number, arrival: number, ctx: RequestContext): Promise<Result<SemaphoreGrantView>> {
    const fsm = this.d.app.fsm;
    // The state may have moved on since the 'sem_queued' answer (or this is a retry): a
    // grant it holds now is its answer after its own key's, as a lock's (lock-service.ts waitForGrant)
    const settled = settledWait(fsm, ctx);
    if (settled !== undefined) {
      if (settled.ok && settled.kind === 'sem_acquired' && fsm.holdsGrant('semaphore', settled.name, settled.sessionId, settled.fencingToken)) return this.confirm(settled, arrival);
      return endedWaitAnswer(fsm, ctx, 'semaphore', settled);
    }
    const sem = fsm.getSemaphore(name);
    const mine = sem.holders.find((h) => h.sessionId === sessionId);
    if (mine) {
      // it holds permits, so its session is live (a grant never outlives it)
      const ttlMs = (fsm.getSession(sessionId) as SessionInfo).ttlMs;
      return this.confirm({ name, sessionId, permits: mine.permits, limit: sem.limit, fencingToken: mine.fencingToken, ttlMs }, arrival);
    }
    if (!this.d.lessor.isLeader) return refused(new Failure('timeout', 'leadership changed while the acquire was queued; retry with the same Idempotency-Key to find your place or your grant'));
    const wait = fsm.semWaitOf(name, sessionId);
    // the wait is over before this answer: what its key settled to, or unknown (ended-wait.ts)
    if (!wait) return endedWaitAnswer(fsm, ctx, 'semaphore');
    // a waiting session is live; its ttl is fixed for its lifetime
    const ttlMs = (fsm.getSession(sessionId) as SessionInfo).ttlMs;
    const outcome = await this.leader.awaitGrant({ target: 'semaphore', name, sessionId, since: wait.since }, arrival, waitMs, ctx.signal);
    switch (outcome.kind) {
      case 'granted': {
        // the grant as its semGranted event carried it
        assert(outcome.permits !== undefined && outcome.limit !== undefined, `semaphore ${name}: a grant event without permits or limit`);
        return this.confirm({ name, sessionId, permits: outcome.permits, limit: outcome.limit, fencingToken: outcome.fencingToken, ttlMs }, arrival);
      }
      case 'cancelled': return refused(full(fsm.getSemaphore(name)));
      case 'session_ended': return refused(sessionNotFound(sessionId));
      // the client went away and gave its place up (awaitGrant); the cancel may lose to a
      // grant: the outcome is unknown, never 503 (as for locks)
      case 'aborted': return refused(new Failure('timeout', 'the request was aborted while queued; the outcome is unknown: retry with the same Idempotency-Key'));
      case 'shutdown': return refused(new Failure('timeout', 'the node is shutting down while the acquire was queued; the wait is committed and the next leader may grant it: retry with the same Idempotency-Key, or release in this session'));
      case 'unknown': return refused(new Failure('timeout', 'leadership changed while waiting; retry with the same Idempotency-Key to find your place or your grant'));
    }
  }
}

function full(sem: SemaphoreInfo): Failure {
  return resultError({ ok: false, code: 'semaphore_full', inUse: sem.inUse, limit: sem.limit });
}

function grantView(r: SemGranted): SemaphoreGrantView {
  return { name: r.name, session_id: r.sessionId, permits: r.permits, limit: r.limit, fencing_token: r.fencingToken, ttl_ms: r.ttlMs };
}

function semaphoreView(s: SemaphoreInfo): SemaphoreView {
  return {
    name: s.name, limit: s.limit, in_use: s.inUse,
    holders: s.holders.map((h) => ({ session_id: h.sessionId, owner: h.owner, permits: h.permits, fencing_token: h.fencingToken })),
    waiters: s.waiters.map((w) => ({ session_id: w.sessionId, owner: w.owner, permits: w.permits, position: w.position })),
  };
}
