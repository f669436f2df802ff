// Semaphores on a real node (docs/contract.md §4 "Semaphores"): the same flow as a lock
// acquire in lock-service.ts — propose, and on a grant renew the lease from the request's
// arrival; on 'sem_queued' wait for the FSM's semGranted / semWaitEnded events, with the
// lessor timing the wait out by semCancelWait (docs/lock-fsm.md "Semaphores").
import type { ApplyResult, Command, SemaphoreInfo } from '../../lock-fsm/index.js';
import { isSessionId } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { RequestContext } from '../../api/service.js';
import type { RevokedView, SemaphoreGrantView, SemaphoreView } from '../../api/service.js';
import type { LeaderLog } from '../leader/leader-log.js';
import type { LeaderCoordinator } from '../leader/leader-coordinator.js';
import { asActor, requester } from './requester.js';
import { revokeGrants } from './revoke.js';
import { resultError, sessionNotFound } from '../../api/result-errors.js';
import type { ServiceDeps } from '../leader/service-deps.js';

export interface SemaphoreAcquire { sessionId?: string; ttlMs?: number; limit: number; permits: number; waitMs: number; owner?: string; maxHoldMs?: number }

export class SemaphoreService {
  constructor(private readonly d: ServiceDeps, private readonly log: LeaderLog, private readonly leader: LeaderCoordinator) {}

  async acquire(name: string, p: SemaphoreAcquire, ctx: RequestContext): Promise<SemaphoreGrantView> {
    const arrival = this.d.nowMs();
    const { sessionId, ...who } = requester(this.d, p, ctx, name);
    const cmd: Command = { kind: 'semAcquire', name, sessionId, limit: p.limit, permits: p.permits, waitMs: p.waitMs, ...who };
    if (p.owner !== undefined) cmd.owner = p.owner;
    if (p.maxHoldMs !== undefined) cmd.maxHoldMs = p.maxHoldMs;
    // the request as sent (no default ttl, no drawn session id; not wait_ms: leader/request-digest.ts)
    const request = { op: 'semaphore.acquire', name, body: { session_id: p.sessionId, ttl_ms: p.ttlMs, limit: p.limit, permits: p.permits, owner: p.owner, max_hold_ms: p.maxHoldMs } };
    const out = await this.log.submitOutput(cmd, ctx, request);
    // answered from the applied result: its name, session and token
    const r = out.result;
    if (r.ok && r.kind === 'sem_acquired') {
      // a replayed grant that is gone since answers as stored (as for locks)
      if (out.replayed && !this.holds(r.name, r.sessionId, r.fencingToken)) return grantView(r);
      return this.confirm(r.name, r.sessionId, r.fencingToken, arrival);
    }
    if (r.ok && r.kind === 'sem_queued') return this.waitForGrant(r.name, r.sessionId, p.waitMs, arrival, ctx);
    throw resultError(r);
  }

  /** A release by a session that holds no permits but waits for them withdraws that wait,
   *  as a lock release does (LeaderCoordinator.withdrawWait, docs/api.md "Release"). */
  async release(name: string, sessionId: string, ctx: RequestContext): Promise<{ name: string; released: true }> {
    if (!isSessionId(sessionId)) throw sessionNotFound(sessionId);
    const cmd = asActor(this.d, { kind: 'semRelease' as const, name, sessionId }, ctx, name);
    const out = await this.log.submitOutput(cmd, ctx, { op: 'semaphore.release', name, body: { session_id: sessionId } });
    const r = out.result;
    if (r.ok && r.kind === 'sem_released') return { name: r.name, released: true };
    if (!r.ok && r.code === 'not_holder') {
      if (await this.leader.withdrawWait(cmd, this.withdrawal(name, sessionId), out.replayed === true, ctx)) return { name, released: true };
      throw new Failure('not_holder', `session ${sessionId} holds no permits of semaphore ${name}`);
    }
    throw resultError(r);
  }

  /** revoke (the route checked `admin` on the name) */
  revoke(name: string, sessionId: string | undefined, ctx: RequestContext): Promise<RevokedView> {
    return revokeGrants(this.log, 'semaphore', name, sessionId, ctx);
  }

  async setLimit(name: string, limit: number, ctx: RequestContext): Promise<{ name: string; limit: number }> {
    const r = await this.log.submit({ kind: 'semSetLimit', name, limit }, ctx, { op: 'semaphore.limit', name, body: { limit } });
    if (r.ok && r.kind === 'sem_limit') return { name: r.name, limit: r.limit };
    throw resultError(r);
  }

  get(name: string, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<SemaphoreView> {
    return this.log.read(consistency, () => semaphoreView(this.d.app.fsm.getSemaphore(name)));
  }

  list(prefix: string, limit: number, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<SemaphoreView[]> {
    return this.log.read(consistency, () => this.d.app.fsm.listSemaphores(prefix, limit).map(semaphoreView));
  }

  /** the session's wait for permits, named by its `since`: a newer wait is left alone */
  private withdrawal(name: string, sessionId: string): Command | undefined {
    const wait = this.d.app.fsm.semWaitOf(name, sessionId);
    return wait === undefined ? undefined : { kind: 'semCancelWait', name, sessionId, since: wait.since };
  }

  private holds(name: string, sessionId: string, token: number): boolean {
    return this.d.app.fsm.getSemaphore(name).holders.some((h) => h.sessionId === sessionId && h.fencingToken === token);
  }

  /** the grant stands and the lease is renewed from the request's arrival, or say what is true now */
  private confirm(name: string, sessionId: string, token: number, arrival: number): SemaphoreGrantView {
    const fsm = this.d.app.fsm;
    const s = fsm.getSession(sessionId);
    if (!s) throw sessionNotFound(sessionId);
    const sem = fsm.getSemaphore(name);
    const h = sem.holders.find((x) => x.sessionId === sessionId && x.fencingToken === token);
    if (!h) throw full(sem);
    this.leader.renewLease(sessionId, arrival, 'timeout');
    return { name, session_id: sessionId, permits: h.permits, limit: sem.limit, fencing_token: token, ttl_ms: s.ttlMs };
  }

  private async waitForGrant(name: string, sessionId: string, waitMs: number, arrival: number, ctx: RequestContext): Promise<SemaphoreGrantView> {
    const fsm = this.d.app.fsm;
    const mine = fsm.getSemaphore(name).holders.find((h) => h.sessionId === sessionId);
    if (mine) return this.confirm(name, sessionId, mine.fencingToken, arrival);
    if (!this.d.lessor.isLeader) throw new Failure('timeout', 'leadership changed while the acquire was queued; retry with the same Idempotency-Key to find your place or your grant');
    const wait = fsm.semWaitOf(name, sessionId);
    // the wait is over before its 'queued' answer was read: the batch that queued it also
    // granted and released it, or ended it (as for locks: lock-service.ts waitForGrant);
    // "full" could be false, the outcome is unknown
    if (!wait) throw new Failure('timeout', 'the wait ended before this request could be answered (it may have been granted and released since): the outcome is unknown; read the semaphore, or retry with the same Idempotency-Key');
    const outcome = await this.leader.awaitGrant({ target: 'semaphore', name, sessionId, since: wait.since }, arrival, waitMs, ctx.signal);
    switch (outcome.kind) {
      case 'granted': return this.confirm(name, sessionId, outcome.fencingToken, arrival);
      case 'cancelled': throw full(fsm.getSemaphore(name));
      case 'session_ended': throw sessionNotFound(sessionId);
      // the client went away and gave its place up (awaitGrant); the cancel may lose to a
      // grant: the outcome is unknown, never 503 (as for locks)
      case 'aborted': throw new Failure('timeout', 'the request was aborted while queued; the outcome is unknown: retry with the same Idempotency-Key');
      case 'shutdown': throw new Failure('timeout', 'the node is shutting down while the acquire was queued; the wait is committed and the next leader may grant it: retry with the same Idempotency-Key, or release in this session');
      case 'unknown': throw new Failure('timeout', 'leadership changed while waiting; retry with the same Idempotency-Key to find your place or your grant');
    }
  }
}

function full(sem: SemaphoreInfo): Failure {
  return resultError({ ok: false, code: 'semaphore_full', inUse: sem.inUse, limit: sem.limit });
}

function grantView(r: Extract<ApplyResult, { kind: 'sem_acquired' }>): SemaphoreGrantView {
  return { name: r.name, session_id: r.sessionId, permits: r.permits, limit: r.limit, fencing_token: r.fencingToken, ttl_ms: r.ttlMs };
}

function semaphoreView(s: SemaphoreInfo): SemaphoreView {
  return {
    name: s.name, limit: s.limit, in_use: s.inUse,
    holders: s.holders.map((h) => ({ session_id: h.sessionId, owner: h.owner, permits: h.permits, fencing_token: h.fencingToken })),
    waiters: s.waiters.map((w) => ({ session_id: w.sessionId, owner: w.owner, permits: w.permits, position: w.position })),
  };
}
