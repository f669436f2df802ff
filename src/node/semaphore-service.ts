// Semaphores on a real node (docs/contract.md §4 "Semaphores"): the same flow as a lock
// acquire in lock-service.ts — propose, and on a grant renew the lease from the request's
// arrival; on 'sem_queued' wait for the FSM's semGranted / semWaitEnded events, with the
// lessor timing the wait out by semCancelWait (docs/lock-fsm.md "Semaphores").
import type { ApplyResult, Command, NewSessionSpec, SemaphoreInfo } from '../lock-fsm/index.js';
import { isSessionId } from '../lock-fsm/index.js';
import { ApiError } from '../api/errors.js';
import type { RequestContext } from '../api/service.js';
import type { RevokedView, SemaphoreGrantView, SemaphoreView } from '../api/service.js';
import { encodeCommand } from './command-codec.js';
import { newSessionId, resultError, sessionNotFound, type RaftLockService } from './lock-service.js';
import { SEMAPHORE_PREFIX } from './wait-registry.js';

export interface SemaphoreAcquire { sessionId?: string; ttlMs?: number; limit: number; permits: number; waitMs: number; owner?: string; maxHoldMs?: number }

export class SemaphoreService {
  constructor(private readonly svc: RaftLockService) {}

  async acquire(name: string, p: SemaphoreAcquire, ctx: RequestContext): Promise<SemaphoreGrantView> {
    const d = this.svc.d;
    const arrival = d.nowMs();
    let cmd: Extract<Command, { kind: 'semAcquire' }>;
    if (p.sessionId === undefined) {
      const newSession: NewSessionSpec = { ttlMs: p.ttlMs ?? d.session.defaultTtlMs, owner: p.owner ?? '', lockDelayMs: d.session.lockDelayMs };
      if (ctx.principal !== undefined) newSession.principal = ctx.principal;
      cmd = { kind: 'semAcquire', name, sessionId: newSessionId(), limit: p.limit, permits: p.permits, waitMs: p.waitMs, newSession };
    } else {
      if (!isSessionId(p.sessionId)) throw sessionNotFound(p.sessionId);
      cmd = { kind: 'semAcquire', name, sessionId: p.sessionId, limit: p.limit, permits: p.permits, waitMs: p.waitMs };
      const actor = this.svc.actor(ctx, name);
      if (actor !== undefined) cmd.actor = actor;
    }
    if (p.owner !== undefined) cmd.owner = p.owner;
    if (p.maxHoldMs !== undefined) cmd.maxHoldMs = p.maxHoldMs;
    const out = await this.svc.submitOutput(cmd, ctx);
    const r = out.result;
    if (r.ok && r.kind === 'sem_acquired') {
      // a replayed grant that is gone since answers as stored (as for locks)
      if (out.replayed && !this.holds(name, r.sessionId, r.fencingToken)) return grantView(r);
      return this.confirm(name, r.sessionId, r.fencingToken, arrival);
    }
    if (r.ok && r.kind === 'sem_queued') return this.waitForGrant(name, r.sessionId, p.waitMs, arrival, ctx);
    throw resultError(r);
  }

  async release(name: string, sessionId: string, ctx: RequestContext): Promise<{ name: string; released: true }> {
    if (!isSessionId(sessionId)) throw sessionNotFound(sessionId);
    const cmd: Command = { kind: 'semRelease', name, sessionId };
    const actor = this.svc.actor(ctx, name);
    if (actor !== undefined) cmd.actor = actor;
    const out = await this.svc.submitOutput(cmd, ctx);
    const r = out.result;
    if (r.ok && r.kind === 'sem_released') return { name, released: true };
    if (!r.ok && r.code === 'not_holder') {
      // a retry with the same key (replayed) changes nothing, as for a lock: a late copy
      // must not withdraw a wait the session began since (docs/api.md "Release")
      if (out.replayed !== true && (await this.withdrawWait(name, sessionId, ctx))) return { name, released: true };
      throw new ApiError('not_holder', `session ${sessionId} holds no permits of semaphore ${name}`);
    }
    throw resultError(r);
  }

  /**
   * A release by a session that holds no permits of `name` but waits for them withdraws
   * that wait, as a lock release does (docs/api.md "Release"): a client cleaning up after
   * an acquire it gave up on cannot be granted permits later. The cancel names the wait
   * it found (its `since`): if that wait ends before the cancel applies, a newer wait of
   * the session (a later acquire) is left alone. If the grant
   * wins the race against the cancel, the permits are released after all: returns true
   * (the answer is then 200 released). The release was applied first, so its permission
   * check (actor) already passed for this session.
   */
  private async withdrawWait(name: string, sessionId: string, ctx: RequestContext): Promise<boolean> {
    const wait = this.svc.d.app.fsm.semWaitOf(name, sessionId);
    if (wait === undefined) return false;
    const inner: RequestContext = { signal: ctx.signal, ...(ctx.principal !== undefined ? { principal: ctx.principal } : {}) };
    const c = (await this.svc.submitOutput({ kind: 'semCancelWait', name, sessionId, since: wait.since }, inner)).result;
    if (!(c.ok && c.kind === 'sem_acquired')) return false;
    const again: Command = { kind: 'semRelease', name, sessionId };
    const actor = this.svc.actor(ctx, name);
    if (actor !== undefined) again.actor = actor;
    // the client's key then answers this release, not the first attempt's not_holder
    if (ctx.idempotencyKey !== undefined) again.settles = ctx.idempotencyKey;
    const r = (await this.svc.submitOutput(again, inner)).result;
    return r.ok && r.kind === 'sem_released';
  }

  /** revoke (the route checked `admin` on the name) */
  revoke(name: string, sessionId: string | undefined, ctx: RequestContext): Promise<RevokedView> {
    return this.svc.revokeGrants('semaphore', name, sessionId, ctx);
  }

  async setLimit(name: string, limit: number, ctx: RequestContext): Promise<{ name: string; limit: number }> {
    const r = (await this.svc.submitOutput({ kind: 'semSetLimit', name, limit }, ctx)).result;
    if (r.ok && r.kind === 'sem_limit') return { name, limit: r.limit };
    throw resultError(r);
  }

  async get(name: string, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<SemaphoreView> {
    if (consistency === 'linearizable') await this.svc.readBarrier(ctx);
    return semaphoreView(this.svc.d.app.fsm.getSemaphore(name));
  }

  async list(prefix: string, limit: number, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<SemaphoreView[]> {
    if (consistency === 'linearizable') await this.svc.readBarrier(ctx);
    return this.svc.d.app.fsm.listSemaphores(prefix, limit).map(semaphoreView);
  }

  private holds(name: string, sessionId: string, token: number): boolean {
    return this.svc.d.app.fsm.getSemaphore(name).holders.some((h) => h.sessionId === sessionId && h.fencingToken === token);
  }

  /** the grant stands and the lease is renewed from the request's arrival, or say what is true now */
  private confirm(name: string, sessionId: string, token: number, arrival: number): SemaphoreGrantView {
    const fsm = this.svc.d.app.fsm;
    const s = fsm.getSession(sessionId);
    if (!s) throw sessionNotFound(sessionId);
    const sem = fsm.getSemaphore(name);
    const h = sem.holders.find((x) => x.sessionId === sessionId && x.fencingToken === token);
    if (!h) throw full(sem);
    this.svc.renewLease(sessionId, arrival, 'timeout');
    return { name, session_id: sessionId, permits: h.permits, limit: sem.limit, fencing_token: token, ttl_ms: s.ttlMs };
  }

  private async waitForGrant(name: string, sessionId: string, waitMs: number, arrival: number, ctx: RequestContext): Promise<SemaphoreGrantView> {
    const d = this.svc.d;
    const fsm = d.app.fsm;
    const mine = fsm.getSemaphore(name).holders.find((h) => h.sessionId === sessionId);
    if (mine) return this.confirm(name, sessionId, mine.fencingToken, arrival);
    if (!d.lessor.isLeader) throw new ApiError('timeout', 'leadership changed while the acquire was queued; retry with the same Idempotency-Key to find your place or your grant');
    const wait = fsm.semWaitOf(name, sessionId);
    if (!wait) throw full(fsm.getSemaphore(name));
    d.lessor.trackWait(name, sessionId, arrival + waitMs, wait.since, true);
    const outcome = await this.svc.waits.wait(SEMAPHORE_PREFIX + name, sessionId, waitMs + Math.max(5000, d.electionTimeoutMaxMs), ctx.signal);
    switch (outcome.kind) {
      case 'granted': return this.confirm(name, sessionId, outcome.fencingToken, arrival);
      case 'cancelled': throw full(fsm.getSemaphore(name));
      case 'session_ended': throw sessionNotFound(sessionId);
      case 'aborted':
        // the client went away: give the place up so permits are not granted to nobody
        if (d.driver.currentRole === 'leader') {
          void d.driver.propose(encodeCommand({ atMs: this.svc.logClock.stamp(), cmd: { kind: 'semCancelWait', name, sessionId, since: wait.since } }));
        }
        // the cancel may lose to a grant: the outcome is unknown, never 503 (as for locks)
        throw new ApiError('timeout', 'the request was aborted while queued; the outcome is unknown: retry with the same Idempotency-Key');
      case 'shutdown': throw new ApiError('timeout', 'the node is shutting down while the acquire was queued; the wait is committed and the next leader may grant it: retry with the same Idempotency-Key, or release in this session');
      case 'unknown': throw new ApiError('timeout', 'leadership changed while waiting; retry with the same Idempotency-Key to find your place or your grant');
    }
  }
}

function full(sem: SemaphoreInfo): ApiError {
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
