// Lock sets on a real node (docs/contract.md §5 "Lock sets"): acquire-all and release-all,
// the same flow as a lock acquire in lock-service.ts. Propose; on a grant renew the lease
// from the request's arrival; on 'queued_all' wait for the grant of the whole set, which
// the state machine makes in one apply and announces with one `setGranted` event (kept
// here, by session and wait, for the request that waits for it), or for the end of its wait,
// which the lessor times out by a cancelWait naming one of its places (ending the set).
// Every answer is the state machine's for THIS request: its result, or the set's own grant.
import type { ApplyOutput, ApplyResult, BlockedName, Command, NewSessionSpec, SetGrant } from '../../lock-fsm/index.js';
import { isSessionId } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { LockSetApi, LockSetGrantView, RequestContext } from '../../api/service.js';
import type { LeaderLog } from '../leader/leader-log.js';
import type { LeaderCoordinator } from '../leader/leader-coordinator.js';
import { newSessionFor } from './requester.js';
import { endedWaitAnswer } from './ended-wait.js';
import { withHold } from '../../api/lock-views.js';
import { resultError, sessionNotFound, setHeldError } from '../../api/result-errors.js';
import type { ServiceDeps } from '../leader/service-deps.js';
import { ok, refused, settled, type Result } from '../../api/service-result.js';
import { countedAcquire } from './acquire-metric.js';

export interface LockSetAcquire { sessionId?: string; ttlMs?: number; waitMs: number; owner?: string; mode?: 'exclusive' | 'shared'; maxHoldMs?: number }

/** how many set grants a node remembers for requests that wait for them (they are taken
 *  within a tick of the apply; the bound only matters when nobody takes them) */
const KEPT_SET_GRANTS = 1024;

export class LockSetService implements LockSetApi {
  /** `sessionId \0 since` → the grants of that set, from its setGranted event */
  private readonly grants = new Map<string, SetGrant[]>();

  constructor(private readonly d: ServiceDeps, private readonly log: LeaderLog, private readonly leader: LeaderCoordinator) {}

  /** every applied entry, on every node (RaftLockService.onApplied): keeps set grants for
   *  their waiting requests and counts deadlock refusals (raftlock_deadlocks_total) */
  onApplied(out: ApplyOutput): void {
    const r = out.result;
    if (!r.ok && r.code === 'deadlock' && out.replayed !== true) this.d.metrics.deadlocks.inc();
    for (const e of out.events) {
      if (e.type !== 'setGranted') continue;
      this.grants.set(key(e.sessionId, e.since), e.grants);
      if (this.grants.size > KEPT_SET_GRANTS) this.grants.delete(this.grants.keys().next().value as string);
    }
  }

  /** counted in raftlock_lock_acquire_total by its answer, each set once (acquire-metric.ts) */
  acquireAll(names: string[], p: LockSetAcquire, ctx: RequestContext): Promise<Result<LockSetGrantView>> {
    return countedAcquire(this.d.metrics, (onQueued) => this.acquire(names, p, ctx, onQueued));
  }

  private async acquire(names: string[], p: LockSetAcquire, ctx: RequestContext, onQueued: () => void): Promise<Result<LockSetGrantView>> {
    const arrival = this.d.nowMs();
    const who = this.requester(p, names, ctx);
    if (!who.ok) return who;
    const cmd: Extract<Command, { kind: 'acquireAll' }> = { kind: 'acquireAll', names, ...who.value, waitMs: p.waitMs };
    if (p.owner !== undefined) cmd.owner = p.owner;
    if (p.mode === 'shared') cmd.mode = 'shared';
    if (p.maxHoldMs !== undefined) cmd.maxHoldMs = p.maxHoldMs;
    // the request as sent, for its Idempotency-Key's binding (leader/request-digest.ts): the names
    // in the request's order (a lock name has no space), no default ttl, no drawn session
    // id, not wait_ms; mode as the contract defaults it
    const request = { op: 'lock.acquire_all', name: names.join(' '), body: { session_id: p.sessionId, ttl_ms: p.ttlMs, owner: p.owner, mode: p.mode ?? 'exclusive', max_hold_ms: p.maxHoldMs } };
    const out = await this.log.submitOutput(cmd, ctx, request);
    const r = out.result;
    if (r.ok && r.kind === 'acquired_all') {
      // a replayed grant that is gone since answers as stored (as for a single lock)
      if (out.replayed && !this.stands(r.sessionId, r.grants)) return ok(view(r.sessionId, r.ttlMs, r.grants, r.mode));
      return this.confirm(r.sessionId, names, r.grants, r.mode, arrival);
    }
    if (r.ok && r.kind === 'queued_all') {
      onQueued();
      return this.waitForSet(cmd, r, arrival, ctx);
    }
    return refused(resultError(r));
  }

  releaseAll(names: string[], sessionId: string, ctx: RequestContext): Promise<Result<{ released: string[] }>> {
    return settled(async () => {
      if (!isSessionId(sessionId)) return refused(sessionNotFound(sessionId));
      const cmd: Extract<Command, { kind: 'releaseAll' }> = { kind: 'releaseAll', names, sessionId };
      const actor = this.actor(names, ctx);
      if (actor !== undefined) cmd.actor = actor;
      const r = await this.log.submit(cmd, ctx, { op: 'lock.release_all', name: names.join(' '), body: { session_id: sessionId } });
      if (r.ok && r.kind === 'released_all') return ok({ released: r.released });
      return refused(resultError(r));
    });
  }

  // ---- internals ---------------------------------------------------------------------

  /** the acquire-all's session: the request's own (checked, with its actor) or a new one */
  private requester(p: LockSetAcquire, names: string[], ctx: RequestContext): Result<{ sessionId: string; newSession?: NewSessionSpec; actor?: string }> {
    if (p.sessionId === undefined) return ok(newSessionFor(this.d, p, ctx));
    if (!isSessionId(p.sessionId)) return refused(sessionNotFound(p.sessionId));
    const actor = this.actor(names, ctx);
    return ok(actor === undefined ? { sessionId: p.sessionId } : { sessionId: p.sessionId, actor });
  }

  /** docs/security.md "Sessions belong to their token": the caller acts on another token's
   *  session only with `admin` on every name of the set */
  private actor(names: string[], ctx: RequestContext): string | undefined {
    const pr = ctx.principal;
    const may = this.d.mayActForOthers;
    if (pr === undefined || may === undefined || names.every((n) => may(pr, n))) return undefined;
    return pr;
  }

  /** does the session still hold each of these grants? */
  private stands(sessionId: string, grants: readonly SetGrant[]): boolean {
    const fsm = this.d.app.fsm;
    return grants.every((g) => fsm.check(g.name, g.fencingToken) && (fsm.getLock(g.name).holders ?? []).some((h) => h.sessionId === sessionId && h.fencingToken === g.fencingToken));
  }

  /** The grants stand and the lease is renewed from the request's arrival; otherwise say
   *  what is true now (a grant ended since: revoked, or its max hold). */
  private confirm(sessionId: string, names: string[], grants: readonly SetGrant[], mode: 'shared' | undefined, arrival: number): Result<LockSetGrantView> {
    const s = this.d.app.fsm.getSession(sessionId);
    if (!s) return refused(sessionNotFound(sessionId));
    if (!this.stands(sessionId, grants)) return refused(setHeldError(this.blocked(names, sessionId)));
    this.leader.renewLease(sessionId, arrival, 'timeout');
    const v = view(sessionId, s.ttlMs, grants, mode);
    // each grant's own terms (a name the session already held keeps its max hold)
    const fsm = this.d.app.fsm;
    for (const row of v.grants) withHold(row, fsm.holdLeftMs('lock', row.name, sessionId, row.fencing_token));
    return ok(v);
  }

  /** each name the session does not hold, with its exclusive holder when it has one */
  private blocked(names: readonly string[], sessionId: string): BlockedName[] {
    const fsm = this.d.app.fsm;
    const out: BlockedName[] = [];
    for (const name of names) {
      const l = fsm.getLock(name);
      if ((l.holders ?? []).some((h) => h.sessionId === sessionId)) continue;
      out.push(l.holder ? { name, holder: l.holder } : { name });
    }
    return out.length > 0 ? out : names.map((name) => ({ name }));
  }

  /** the name of one of the set's places (a lock it waits on, queued at `since`), if it still waits */
  private place(names: readonly string[], sessionId: string, since: number): string | undefined {
    const fsm = this.d.app.fsm;
    return names.find((n) => fsm.waitOf(n, sessionId)?.since === since);
  }

  private async waitForSet(cmd: Extract<Command, { kind: 'acquireAll' }>, q: Extract<ApplyResult, { kind: 'queued_all' }>, arrival: number, ctx: RequestContext): Promise<Result<LockSetGrantView>> {
    const { sessionId, since } = q;
    const names = q.names;
    const mode = cmd.mode;
    // The state may have moved on since the 'queued_all' answer (or this is a retry).
    const early = this.grants.get(key(sessionId, since));
    if (early) {
      this.grants.delete(key(sessionId, since));
      return this.confirm(sessionId, names, early, mode, arrival);
    }
    if (!this.d.lessor.isLeader) return refused(new Failure('timeout', 'leadership changed while the acquire-all was queued; retry with the same Idempotency-Key to find your place or your grant'));
    if (!this.d.app.fsm.getSession(sessionId)) return refused(sessionNotFound(sessionId));
    const place = this.place(names, sessionId, since);
    // the wait is over before this answer: what its key settled to, or unknown (ended-wait.ts)
    if (place === undefined) return endedWaitAnswer(this.d.app.fsm, ctx, 'locks');
    const started = this.d.nowMs();
    const outcome = await this.leader.awaitGrant({ target: 'lock', name: place, sessionId, since }, arrival, cmd.waitMs, ctx.signal);
    this.d.metrics.lockWait.observe((this.d.nowMs() - started) / 1000);
    switch (outcome.kind) {
      case 'granted': {
        // the whole set was granted in the apply that granted this place
        const grants = this.grants.get(key(sessionId, since));
        this.grants.delete(key(sessionId, since));
        if (!grants) return refused(new Failure('timeout', 'the set was granted but its grant is no longer known here; retry with the same Idempotency-Key'));
        return this.confirm(sessionId, names, grants, mode, arrival);
      }
      case 'cancelled':
        return refused(setHeldError(this.blocked(names, sessionId)));
      case 'session_ended':
        return refused(sessionNotFound(sessionId));
      case 'aborted':
        return refused(new Failure('timeout', 'the request was aborted while the acquire-all was queued; the wait is committed and may still be granted: retry with the same Idempotency-Key, or release-all in this session'));
      case 'shutdown':
        return refused(new Failure('timeout', 'the node is shutting down while the acquire-all was queued; the wait is committed and the next leader may grant it: retry with the same Idempotency-Key, or release-all in this session'));
      case 'unknown':
        return refused(new Failure('timeout', 'leadership changed while waiting; retry with the same Idempotency-Key to find your place or your grant'));
    }
  }
}

function key(sessionId: string, since: number): string {
  return `${sessionId}\u0000${since}`;
}

function view(sessionId: string, ttlMs: number, grants: readonly SetGrant[], mode: 'shared' | undefined): LockSetGrantView {
  const v: LockSetGrantView = { session_id: sessionId, ttl_ms: ttlMs, grants: grants.map((g) => ({ name: g.name, fencing_token: g.fencingToken })) };
  if (mode === 'shared') v.mode = 'shared';
  return v;
}
