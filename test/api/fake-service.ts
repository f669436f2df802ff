// A small in-memory LockService for the REST tests: just enough lock semantics (sessions,
// one holder, monotonically increasing tokens) to give every route a real answer, plus
// switches for routing and a record of the contexts the routes passed in. Its methods answer
// a Result as the real services do (src/api/service-result.ts): a refusal made here by a
// throw is caught into one (answer()); `failWith` set to a non-Failure error still throws.
import { ApiError } from '../../src/api/errors.js';
import { ok, settled, type Result } from '../../src/api/service-result.js';
import type { ClusterView, LeaderOp, LockService, LockSetApi, LockView, RequestContext, Routing } from '../../src/api/service.js';

interface FakeSession { id: string; owner: string; ttlMs: number; locks: Set<string> }
interface FakeLock { holder: string; token: number }

export class FakeService implements LockService {
  routingView: Routing = { isLeader: true, leaderApi: null };
  isReady = true;
  /** the leader-side budgets a relay waits for (absent: the forwarding timeout alone) */
  leaderBudgetMs?: (op: LeaderOp, waitMs: number) => number | undefined;
  readonly calls: { method: string; args: unknown[]; ctx?: RequestContext }[] = [];
  private sessions = new Map<string, FakeSession>();
  private locks = new Map<string, FakeLock>();
  private nextSession = 1;
  private lastToken = 0;
  /** when set, every service call throws it (to test error rendering) */
  failWith: Error | null = null;

  constructor(readonly defaultTtlMs = 10_000) {}

  private record(method: string, ctx: RequestContext | undefined, ...args: unknown[]): void {
    this.calls.push({ method, args, ...(ctx ? { ctx } : {}) });
    if (this.failWith) throw this.failWith;
  }
  /** the last recorded call, or the last call of `method` */
  last(method?: string): { method: string; args: unknown[]; ctx?: RequestContext } | undefined {
    for (let i = this.calls.length - 1; i >= 0; i--) if (!method || this.calls[i]?.method === method) return this.calls[i];
    return undefined;
  }
  /** fn's value as a Result; a Failure it throws (an ApiError here) as a refusal */
  private answer<T>(fn: () => T | Promise<T>): Promise<Result<T>> {
    return settled(async () => ok(await fn()));
  }
  private open(p: { ttlMs?: number; owner?: string }): string {
    const id = `s${this.nextSession++}`;
    this.sessions.set(id, { id, owner: p.owner ?? '', ttlMs: p.ttlMs ?? this.defaultTtlMs, locks: new Set() });
    return id;
  }
  /** the new session of an acquire without one, recorded as an openSession call */
  private openFor(p: { ttlMs?: number; owner?: string }, ctx: RequestContext): string {
    const o = { ...(p.ttlMs !== undefined ? { ttlMs: p.ttlMs } : {}), ...(p.owner !== undefined ? { owner: p.owner } : {}) };
    this.record('openSession', ctx, o);
    return this.open(o);
  }
  private session(id: string): FakeSession {
    const s = this.sessions.get(id);
    if (!s) throw new ApiError('session_not_found', `session ${id} not found`);
    return s;
  }

  routing(): Routing { return this.routingView; }
  ready(): boolean { return this.isReady; }

  openSession(p: { ttlMs?: number; owner?: string; lockDelayMs?: number }, ctx: RequestContext) {
    return this.answer(() => {
      this.record('openSession', ctx, p);
      return { session_id: this.open(p), ttl_ms: p.ttlMs ?? this.defaultTtlMs };
    });
  }
  keepalive(sessionId: string, ctx: RequestContext) {
    return this.answer(async () => {
      this.record('keepalive', ctx, sessionId);
      const s = this.session(sessionId);
      return { session_id: s.id, ttl_ms: s.ttlMs };
    });
  }
  getSession(sessionId: string, ctx: RequestContext) {
    return this.answer(async () => {
      this.record('getSession', ctx, sessionId);
      const s = this.session(sessionId);
      return { session_id: s.id, owner: s.owner, ttl_ms: s.ttlMs, locks: [...s.locks] };
    });
  }
  closeSession(sessionId: string, ctx: RequestContext) {
    return this.answer(async () => {
      this.record('closeSession', ctx, sessionId);
      const s = this.session(sessionId);
      this.sessions.delete(sessionId);
      for (const n of s.locks) this.locks.delete(n);
      return { released: [...s.locks] };
    });
  }
  acquire(name: string, p: { sessionId?: string; ttlMs?: number; waitMs: number; owner?: string }, ctx: RequestContext) {
    return this.answer(async () => {
      this.record('acquire', ctx, name, p);
      let sid = p.sessionId;
      if (sid === undefined) sid = this.openFor(p, ctx);
      const s = this.session(sid);
      const l = this.locks.get(name);
      if (l && l.holder !== sid) {
        const h = this.sessions.get(l.holder);
        throw new ApiError('lock_held', `lock ${name} is held by another session`, { details: { holder: { session_id: l.holder, owner: h?.owner ?? '', fencing_token: l.token } } });
      }
      if (l) return { name, session_id: sid, fencing_token: l.token, ttl_ms: s.ttlMs };
      const token = ++this.lastToken;
      this.locks.set(name, { holder: sid, token });
      s.locks.add(name);
      return { name, session_id: sid, fencing_token: token, ttl_ms: s.ttlMs };
    });
  }
  /** lock sets (docs/contract.md §5): all names or none, no queue */
  readonly lockSets: LockSetApi = {
    acquireAll: (names: string[], p: { sessionId?: string; ttlMs?: number; waitMs: number; owner?: string }, ctx: RequestContext) => this.answer(async () => {
      this.record('acquireAll', ctx, names, p);
      const sid = p.sessionId ?? this.openFor(p, ctx);
      const s = this.session(sid);
      const blocked = names.filter((n) => { const l = this.locks.get(n); return l !== undefined && l.holder !== sid; });
      if (blocked.length > 0) throw new ApiError('lock_held', 'not every lock of the set could be granted', { details: { blocked: blocked.map((n) => ({ name: n, holder: { session_id: this.locks.get(n)!.holder, owner: '', fencing_token: this.locks.get(n)!.token } })) } });
      const grants = names.map((n) => {
        const l = this.locks.get(n);
        if (l) return { name: n, fencing_token: l.token };
        const token = ++this.lastToken;
        this.locks.set(n, { holder: sid, token });
        s.locks.add(n);
        return { name: n, fencing_token: token };
      });
      return { session_id: sid, ttl_ms: s.ttlMs, grants };
    }),
    releaseAll: (names: string[], sessionId: string, ctx: RequestContext) => this.answer(async () => {
      this.record('releaseAll', ctx, names, sessionId);
      const s = this.session(sessionId);
      const released = names.filter((n) => this.locks.get(n)?.holder === sessionId);
      for (const n of released) { this.locks.delete(n); s.locks.delete(n); }
      return { released };
    }),
  };
  renew(name: string, sessionId: string, ctx: RequestContext) {
    return this.answer(async () => {
      this.record('renew', ctx, name, sessionId);
      const s = this.session(sessionId);
      const l = this.locks.get(name);
      if (!l || l.holder !== sessionId) throw new ApiError('not_holder', `session ${sessionId} does not hold ${name}`);
      return { name, session_id: sessionId, fencing_token: l.token, ttl_ms: s.ttlMs };
    });
  }
  release(name: string, sessionId: string, fencingToken: number | undefined, ctx: RequestContext) {
    return this.answer(async () => {
      this.record('release', ctx, name, sessionId, fencingToken);
      const s = this.session(sessionId);
      const l = this.locks.get(name);
      if (!l || l.holder !== sessionId || (fencingToken !== undefined && fencingToken !== l.token)) throw new ApiError('not_holder', `session ${sessionId} does not hold ${name}`);
      this.locks.delete(name);
      s.locks.delete(name);
      return { name, released: true as const };
    });
  }
  revoke(name: string, sessionId: string | undefined, ctx: RequestContext) {
    return this.answer(async () => {
      this.record('revoke', ctx, name, sessionId);
      const l = this.locks.get(name);
      if (!l || (sessionId !== undefined && l.holder !== sessionId)) {
        if (sessionId !== undefined) throw new ApiError('not_holder', `session ${sessionId} does not hold ${name}`);
        return { name, revoked: [] };
      }
      this.locks.delete(name);
      this.sessions.get(l.holder)?.locks.delete(name);
      return { name, revoked: [{ session_id: l.holder, fencing_token: l.token }] };
    });
  }
  private view(name: string): LockView {
    const l = this.locks.get(name);
    if (!l) return { name, held: false, waiters: 0 };
    return { name, held: true, holder: { session_id: l.holder, owner: this.sessions.get(l.holder)?.owner ?? '', fencing_token: l.token }, waiters: 0 };
  }
  getLock(name: string, consistency: 'linearizable' | 'stale', ctx: RequestContext) {
    return this.answer(async () => {
      this.record('getLock', ctx, name, consistency);
      return this.view(name);
    });
  }
  listLocks(prefix: string, limit: number, consistency: 'linearizable' | 'stale', ctx: RequestContext) {
    return this.answer(async () => {
      this.record('listLocks', ctx, prefix, limit, consistency);
      return [...this.locks.keys()].filter((n) => n.startsWith(prefix)).sort().slice(0, limit).map((n) => this.view(n));
    });
  }
  checkToken(name: string, fencingToken: number, ctx: RequestContext) {
    return this.answer(async () => {
      this.record('checkToken', ctx, name, fencingToken);
      return { name, current: this.locks.get(name)?.token === fencingToken };
    });
  }
  cluster(): ClusterView {
    this.record('cluster', undefined);
    return {
      node_id: 'n1', role: this.routingView.isLeader ? 'leader' : 'follower', term: 3, leader_id: 'n1', commit_index: 10, applied_index: 10,
      members: [{ id: 'n1', api: 'http://127.0.0.1:17001', peer: 'http://127.0.0.1:17101', role: 'leader', match_index: 10 }],
    };
  }
  addMember(m: { id: string; api: string; peer: string }, ctx: RequestContext) {
    return this.answer(() => {
      this.record('addMember', ctx, m);
      const c = this.cluster();
      c.members.push({ ...m, role: 'learner' });
      return c;
    });
  }
  promoteMember(id: string, ctx: RequestContext) {
    return this.answer(() => {
      this.record('promoteMember', ctx, id);
      return this.cluster();
    });
  }
  removeMember(id: string, ctx: RequestContext) {
    return this.answer(() => {
      this.record('removeMember', ctx, id);
      if (id !== 'n1') throw new ApiError('not_found', `no member ${id}`);
      return this.cluster();
    });
  }
  transferLeadership(to: string | undefined, ctx: RequestContext) {
    return this.answer(() => {
      this.record('transferLeadership', ctx, to);
      return { leader_id: to ?? 'n2' };
    });
  }
}
