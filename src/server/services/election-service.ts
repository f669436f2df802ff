// Leader election on a real node (docs/contract.md §4 "Leader election"). A campaign is
// the lock FSM's exclusive acquire with a value (docs/lock-fsm.md "Elections"), so this is
// the flow of a lock acquire in lock-service.ts: propose; on a grant, renew the lease from
// the request's arrival; on 'queued', wait for the FSM's granted / waitEnded events of
// the lock, with the lessor timing the wait out by cancelWait (the election's waits are
// the lock's waits).
import { assert } from '../../assert.js';
import type { ApplyResult, Command, ElectionInfo, SessionInfo } from '../../lock-fsm/index.js';
import { isSessionId } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { CampaignView, ElectionApi, ElectionLeaderView, ElectionListItem, ElectionView, RequestContext } from '../../api/service.js';
import type { LeaderLog } from '../leader/leader-log.js';
import type { LeaderCoordinator } from '../leader/leader-coordinator.js';
import { asActor, requester } from './requester.js';
import { endedWaitAnswer, settledWait } from './ended-wait.js';
import { withHold } from '../../api/lock-views.js';
import { grantEndedBeforeAnswer, resultError, sessionNotFound } from '../../api/result-errors.js';
import type { ServiceDeps } from '../leader/service-deps.js';
import { ok, refused, settled, type Result } from '../../api/service-result.js';

export interface Campaign { sessionId?: string; ttlMs?: number; value: string; waitMs: number; owner?: string; maxHoldMs?: number }

/** a leadership as the state machine made it: a campaign's `acquired` result, or a
 *  waiting campaign's `granted` event with its session's ttl. The answer is built from it
 *  alone. */
interface Leadership { name: string; sessionId: string; fencingToken: number; value: string; ttlMs: number }

export class ElectionService implements ElectionApi {
  constructor(private readonly d: ServiceDeps, private readonly log: LeaderLog, private readonly leader: LeaderCoordinator) {}

  campaign(name: string, p: Campaign, ctx: RequestContext): Promise<Result<CampaignView>> {
    return settled(() => this.run(name, p, ctx));
  }

  private async run(name: string, p: Campaign, ctx: RequestContext): Promise<Result<CampaignView>> {
    const arrival = this.d.nowMs();
    const who = requester(this.d, p, ctx, name);
    if (!who.ok) return who;
    const { sessionId, ...rest } = who.value;
    const cmd: Command = { kind: 'campaign', name, sessionId, value: p.value, waitMs: p.waitMs, ...rest };
    if (p.owner !== undefined) cmd.owner = p.owner;
    if (p.maxHoldMs !== undefined) cmd.maxHoldMs = p.maxHoldMs; // docs/contract.md §4 "Revocation and maximum hold"
    // the request as sent (no default ttl, no drawn session id; not wait_ms: leader/request-digest.ts)
    const request = { op: 'election.campaign', name, body: { session_id: p.sessionId, ttl_ms: p.ttlMs, value: p.value, owner: p.owner, max_hold_ms: p.maxHoldMs } };
    const out = await this.log.submitOutput(cmd, ctx, request);
    // answered from the applied result: its name, session, token and value
    const r = out.result;
    if (r.ok && r.kind === 'acquired') {
      const won: Leadership = { name: r.name, sessionId: r.sessionId, fencingToken: r.fencingToken, value: r.value ?? '', ttlMs: r.ttlMs };
      // a replayed leadership that is gone since answers as stored (as for locks)
      if (out.replayed && !this.d.app.fsm.holdsGrant('lock', r.name, r.sessionId, r.fencingToken)) return ok(campaignView(won));
      return this.confirm(won, arrival);
    }
    if (r.ok && r.kind === 'queued') return this.waitForLeadership(r.name, r.sessionId, p.waitMs, arrival, ctx);
    if (!r.ok && r.code === 'lock_held') return refused(campaignLost(name, r));
    return refused(resultError(r));
  }

  proclaim(name: string, sessionId: string, value: string, ctx: RequestContext): Promise<Result<{ name: string; value: string }>> {
    return settled(async () => {
      if (!isSessionId(sessionId)) return refused(sessionNotFound(sessionId));
      const r = await this.log.submit(asActor(this.d, { kind: 'proclaim' as const, name, sessionId, value }, ctx, name), ctx, { op: 'election.proclaim', name, body: { session_id: sessionId, value } });
      if (r.ok && r.kind === 'proclaimed') return ok({ name: r.name, value: r.value });
      if (!r.ok && r.code === 'not_holder') return refused(new Failure('not_holder', `session ${sessionId} does not lead election ${name}`));
      return refused(resultError(r));
    });
  }

  resign(name: string, sessionId: string, ctx: RequestContext): Promise<Result<{ name: string; resigned: true }>> {
    return settled(async () => {
      if (!isSessionId(sessionId)) return refused(sessionNotFound(sessionId));
      const r = await this.log.submit(asActor(this.d, { kind: 'resign' as const, name, sessionId }, ctx, name), ctx, { op: 'election.resign', name, body: { session_id: sessionId } });
      if (r.ok && r.kind === 'resigned') return ok({ name: r.name, resigned: true as const });
      if (!r.ok && r.code === 'not_holder') return refused(new Failure('not_holder', `session ${sessionId} neither leads nor campaigns in election ${name}`));
      return refused(resultError(r));
    });
  }

  get(name: string, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<Result<ElectionView>> {
    return settled(async () => ok(await this.log.read(consistency, () => ({ name, leader: leaderView(this.d.app.fsm.getElection(name)) }))));
  }

  list(prefix: string, limit: number, consistency: 'linearizable' | 'stale', _ctx: RequestContext): Promise<Result<ElectionListItem[]>> {
    return settled(async () => ok(await this.log.read(consistency, () => this.d.app.fsm.listElections(prefix, limit).flatMap((e) => (e.leader === null ? [] : [{
      name: e.name, leader: { session_id: e.leader.sessionId, owner: e.leader.owner, value: e.leader.value, fencing_token: e.leader.fencingToken }, waiters: e.waiters,
    }])))));
  }

  /**
   * The FSM made `l` the election's leader (now, or for a campaign that waited). Answer
   * with it only if it still stands — later entries of the same committed batch may have
   * ended it — and the lease could be renewed from this request's arrival; otherwise say
   * what is true now. One look into the state machine (holdsGrant: a campaign's grant is
   * its lock's); the answer itself is the apply's (as for locks: lock-service.ts confirmGrant).
   */
  private confirm(l: Leadership, arrival: number): Result<CampaignView> {
    const fsm = this.d.app.fsm;
    if (!fsm.holdsGrant('lock', l.name, l.sessionId, l.fencingToken)) {
      // a grant never outlives its session: an ended session is the truer answer
      if (!fsm.getSession(l.sessionId)) return refused(sessionNotFound(l.sessionId));
      return refused(grantEndedBeforeAnswer(`election ${l.name}`, heldBy(l.name, fsm.getElection(l.name))));
    }
    this.leader.renewLease(l.sessionId, arrival, 'timeout');
    return ok(withHold(campaignView(l), fsm.holdLeftMs('lock', l.name, l.sessionId, l.fencingToken)));
  }

  private async waitForLeadership(name: string, sessionId: string, waitMs: number, arrival: number, ctx: RequestContext): Promise<Result<CampaignView>> {
    const fsm = this.d.app.fsm;
    // The state may have moved on since the 'queued' answer (or this is a retry): a
    // leadership it holds now is its answer after its own key's, as a lock's (lock-service.ts waitForGrant)
    const settled = settledWait(fsm, ctx);
    if (settled !== undefined) {
      if (settled.ok && settled.kind === 'acquired' && settled.value !== undefined && fsm.holdsGrant('lock', settled.name, settled.sessionId, settled.fencingToken)) {
        return this.confirm({ name, sessionId, fencingToken: settled.fencingToken, value: settled.value, ttlMs: settled.ttlMs }, arrival);
      }
      return endedWaitAnswer(fsm, ctx, 'election', settled);
    }
    const now = fsm.getElection(name).leader;
    if (now !== null && now.sessionId === sessionId) {
      // it leads, so its session is live (a grant never outlives it)
      const ttlMs = (fsm.getSession(sessionId) as SessionInfo).ttlMs;
      return this.confirm({ name, sessionId, fencingToken: now.fencingToken, value: now.value, ttlMs }, arrival);
    }
    if (!this.d.lessor.isLeader) return refused(new Failure('timeout', 'leadership changed while the campaign was queued; retry with the same Idempotency-Key to find your place or your leadership'));
    const wait = fsm.waitOf(name, sessionId);
    // the wait is over before this answer: what its key settled to, or unknown (ended-wait.ts)
    if (!wait) return endedWaitAnswer(fsm, ctx, 'election');
    // a waiting session is live; its ttl is fixed for its lifetime
    const ttlMs = (fsm.getSession(sessionId) as SessionInfo).ttlMs;
    const outcome = await this.leader.awaitGrant({ target: 'lock', name, sessionId, since: wait.since }, arrival, waitMs, ctx.signal);
    switch (outcome.kind) {
      case 'granted':
        // the leadership as its granted event carried it: a campaign's grant carries its value
        assert(outcome.value !== undefined, `election ${name}: a campaign's grant event without its value`);
        return this.confirm({ name, sessionId, fencingToken: outcome.fencingToken, value: outcome.value, ttlMs }, arrival);
      case 'cancelled': return refused(heldBy(name, fsm.getElection(name)));
      case 'session_ended': return refused(sessionNotFound(sessionId));
      case 'aborted':
        // the client went away and gave its place up (awaitGrant), so that nobody is made
        // leader unheard; the cancel may lose to a grant
        return refused(new Failure('timeout', 'the request was aborted while the campaign was queued; the outcome is unknown: retry with the same Idempotency-Key, or resign in this session'));
      case 'shutdown': return refused(new Failure('timeout', 'the node is shutting down while the campaign was queued; the wait is committed and the next leader may grant it: retry with the same Idempotency-Key, or resign in this session'));
      case 'unknown': return refused(new Failure('timeout', 'leadership changed while waiting; retry with the same Idempotency-Key to find your place or your leadership'));
    }
  }
}

function campaignView(l: Leadership): CampaignView {
  return { name: l.name, session_id: l.sessionId, value: l.value, fencing_token: l.fencingToken, ttl_ms: l.ttlMs };
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
