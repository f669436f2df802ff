// Leader election on a real node (docs/contract.md §4 "Leader election"). A campaign is
// the lock FSM's exclusive acquire with a value (docs/lock-fsm.md "Elections"), so this is
// the flow of a lock acquire in lock-service.ts: propose; on a grant, renew the lease from
// the request's arrival; on 'queued', wait for the FSM's granted / waitEnded events of
// the lock, with the lessor timing the wait out by cancelWait (the election's waits are
// the lock's waits).
import type { ApplyResult, Command, ElectionInfo } from '../../lock-fsm/index.js';
import { isSessionId } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { CampaignView, ElectionApi, ElectionLeaderView, ElectionListItem, ElectionView, RequestContext } from '../../api/service.js';
import type { LeaderLog } from '../leader/leader-log.js';
import type { LeaderCoordinator } from '../leader/leader-coordinator.js';
import { asActor, requester } from './requester.js';
import { resultError, sessionNotFound } from '../../api/result-errors.js';
import type { ServiceDeps } from '../leader/service-deps.js';

export interface Campaign { sessionId?: string; ttlMs?: number; value: string; waitMs: number; owner?: string; maxHoldMs?: number }

export class ElectionService implements ElectionApi {
  constructor(private readonly d: ServiceDeps, private readonly log: LeaderLog, private readonly leader: LeaderCoordinator) {}

  async campaign(name: string, p: Campaign, ctx: RequestContext): Promise<CampaignView> {
    const arrival = this.d.nowMs();
    const { sessionId, ...who } = requester(this.d, p, ctx, name);
    const cmd: Command = { kind: 'campaign', name, sessionId, value: p.value, waitMs: p.waitMs, ...who };
    if (p.owner !== undefined) cmd.owner = p.owner;
    if (p.maxHoldMs !== undefined) cmd.maxHoldMs = p.maxHoldMs; // docs/contract.md §4 "Revocation and maximum hold"
    // the request as sent (no default ttl, no drawn session id; not wait_ms: leader/request-digest.ts)
    const request = { op: 'election.campaign', name, body: { session_id: p.sessionId, ttl_ms: p.ttlMs, value: p.value, owner: p.owner, max_hold_ms: p.maxHoldMs } };
    const out = await this.log.submitOutput(cmd, ctx, request);
    // answered from the applied result: its name, session, token and value
    const r = out.result;
    if (r.ok && r.kind === 'acquired') {
      // a replayed leadership that is gone since answers as stored (as for locks)
      if (out.replayed && !this.leads(r.name, r.sessionId, r.fencingToken)) return { name: r.name, session_id: r.sessionId, value: r.value ?? '', fencing_token: r.fencingToken, ttl_ms: r.ttlMs };
      return this.confirm(r.name, r.sessionId, r.fencingToken, arrival);
    }
    if (r.ok && r.kind === 'queued') return this.waitForLeadership(r.name, r.sessionId, p.waitMs, arrival, ctx);
    if (!r.ok && r.code === 'lock_held') throw campaignLost(name, r);
    throw resultError(r);
  }

  async proclaim(name: string, sessionId: string, value: string, ctx: RequestContext): Promise<{ name: string; value: string }> {
    if (!isSessionId(sessionId)) throw sessionNotFound(sessionId);
    const r = await this.log.submit(asActor(this.d, { kind: 'proclaim' as const, name, sessionId, value }, ctx, name), ctx, { op: 'election.proclaim', name, body: { session_id: sessionId, value } });
    if (r.ok && r.kind === 'proclaimed') return { name: r.name, value: r.value };
    if (!r.ok && r.code === 'not_holder') throw new Failure('not_holder', `session ${sessionId} does not lead election ${name}`);
    throw resultError(r);
  }

  async resign(name: string, sessionId: string, ctx: RequestContext): Promise<{ name: string; resigned: true }> {
    if (!isSessionId(sessionId)) throw sessionNotFound(sessionId);
    const r = await this.log.submit(asActor(this.d, { kind: 'resign' as const, name, sessionId }, ctx, name), ctx, { op: 'election.resign', name, body: { session_id: sessionId } });
    if (r.ok && r.kind === 'resigned') return { name: r.name, resigned: true };
    if (!r.ok && r.code === 'not_holder') throw new Failure('not_holder', `session ${sessionId} neither leads nor campaigns in election ${name}`);
    throw resultError(r);
  }

  get(name: string, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<ElectionView> {
    return this.log.read(consistency, () => ({ name, leader: leaderView(this.d.app.fsm.getElection(name)) }));
  }

  list(prefix: string, limit: number, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<ElectionListItem[]> {
    return this.log.read(consistency, () => this.d.app.fsm.listElections(prefix, limit).flatMap((e) => (e.leader === null ? [] : [{
      name: e.name, leader: { session_id: e.leader.sessionId, owner: e.leader.owner, value: e.leader.value, fencing_token: e.leader.fencingToken }, waiters: e.waiters,
    }])));
  }

  private leads(name: string, sessionId: string, token: number): boolean {
    const l = this.d.app.fsm.getElection(name).leader;
    return l !== null && l.sessionId === sessionId && l.fencingToken === token;
  }

  /** the leadership stands and the lease is renewed from the request's arrival, or say what is true now */
  private confirm(name: string, sessionId: string, token: number, arrival: number): CampaignView {
    const fsm = this.d.app.fsm;
    const s = fsm.getSession(sessionId);
    if (!s) throw sessionNotFound(sessionId);
    const e = fsm.getElection(name);
    if (e.leader === null || e.leader.sessionId !== sessionId || e.leader.fencingToken !== token) throw heldBy(name, e);
    this.leader.renewLease(sessionId, arrival, 'timeout');
    return { name, session_id: sessionId, value: e.leader.value, fencing_token: token, ttl_ms: s.ttlMs };
  }

  private async waitForLeadership(name: string, sessionId: string, waitMs: number, arrival: number, ctx: RequestContext): Promise<CampaignView> {
    const fsm = this.d.app.fsm;
    const now = fsm.getElection(name).leader;
    if (now !== null && now.sessionId === sessionId) return this.confirm(name, sessionId, now.fencingToken, arrival);
    if (!this.d.lessor.isLeader) throw new Failure('timeout', 'leadership changed while the campaign was queued; retry with the same Idempotency-Key to find your place or your leadership');
    const wait = fsm.waitOf(name, sessionId);
    if (!wait) throw heldBy(name, fsm.getElection(name));
    const outcome = await this.leader.awaitGrant({ target: 'lock', name, sessionId, since: wait.since }, arrival, waitMs, ctx.signal);
    switch (outcome.kind) {
      case 'granted': return this.confirm(name, sessionId, outcome.fencingToken, arrival);
      case 'cancelled': throw heldBy(name, fsm.getElection(name));
      case 'session_ended': throw sessionNotFound(sessionId);
      case 'aborted':
        // the client went away and gave its place up (awaitGrant), so that nobody is made
        // leader unheard; the cancel may lose to a grant
        throw new Failure('timeout', 'the request was aborted while the campaign was queued; the outcome is unknown: retry with the same Idempotency-Key, or resign in this session');
      case 'shutdown': throw new Failure('timeout', 'the node is shutting down while the campaign was queued; the wait is committed and the next leader may grant it: retry with the same Idempotency-Key, or resign in this session');
      case 'unknown': throw new Failure('timeout', 'leadership changed while waiting; retry with the same Idempotency-Key to find your place or your leadership');
    }
  }
}

function leaderView(e: ElectionInfo): ElectionLeaderView | null {
  return e.leader === null ? null : { session_id: e.leader.sessionId, value: e.leader.value, fencing_token: e.leader.fencingToken };
}

/** 409 lock_held with the current leader (null while none leads: the lock is in
 *  lock-delay, or held by a plain acquire) */
function heldBy(name: string, e: ElectionInfo): Failure {
  const leader = leaderView(e);
  const msg = leader === null ? `election ${name} has no leader to hand over yet (lock-delay, or the name is held as a plain lock)` : `election ${name} is led by session ${leader.session_id}`;
  return new Failure('lock_held', msg, { details: { leader } });
}

function campaignLost(name: string, r: Extract<ApplyResult, { ok: false; code: 'lock_held' }>): Failure {
  if (r.holder !== undefined && r.value !== undefined) {
    return new Failure('lock_held', `election ${name} is led by session ${r.holder.sessionId}`, { details: { leader: { session_id: r.holder.sessionId, value: r.value, fencing_token: r.holder.fencingToken } } });
  }
  return heldBy(name, { name, leader: null, waiters: 0 });
}
