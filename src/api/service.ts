// What the REST layer needs from a node, in the contract's own terms (docs/contract.md §3
// "REST API"). The routes validate input, call one of these, and render its Result
// (service-result.ts): the value, or the Failure it refuses with (failure.ts: a catalog
// code without HTTP), which failure-edge.ts answerOf gives its status. The server
// (src/server/services, src/server/membership/cluster-ops.ts) implements it on top of the
// Raft driver and the lock state machine; tests implement it with fakes. Every method that
// changes state or reads linearizably runs on the leader only: on a follower the route
// forwards the HTTP request instead of calling it (see routing()).
import type { Result } from './service-result.js';

export interface RequestContext {
  /** the Idempotency-Key header, when the client sent one (1–128 bytes, validated) */
  idempotencyKey?: string;
  /** aborted when the client went away or the server is shutting down */
  signal: AbortSignal;
  /** identity of the caller when auth is on (token name), for per-token limits */
  principal?: string;
}

export interface HolderView {
  session_id: string;
  owner: string;
  fencing_token: number;
}
export interface LockView {
  name: string;
  held: boolean;
  /** the exclusive holder */
  holder?: HolderView;
  waiters: number;
  /** while held: the mode of its grants (docs/contract.md §4 "Shared (read) locks") */
  mode?: 'exclusive' | 'shared';
  /** while held: every holder, in grant order */
  holders?: (HolderView & { mode: 'exclusive' | 'shared' })[];
}
export interface GrantView {
  name: string;
  session_id: string;
  fencing_token: number;
  ttl_ms: number;
  /** present on a shared grant */
  mode?: 'shared';
  /** present when the grant has a maximum hold: at most how much longer it lasts (ms),
   *  counted from the request's send (docs/contract.md §4 "Revocation and maximum hold") */
  max_hold_ms?: number;
}
export interface SemaphoreGrantView {
  name: string;
  session_id: string;
  permits: number;
  limit: number;
  fencing_token: number;
  ttl_ms: number;
  /** as GrantView.max_hold_ms */
  max_hold_ms?: number;
}
export interface SemaphoreView {
  name: string;
  /** 0 for an idle semaphore (it keeps no state) */
  limit: number;
  in_use: number;
  holders: { session_id: string; owner: string; permits: number; fencing_token: number }[];
  waiters: { session_id: string; owner: string; permits: number; position: number }[];
}
/** the grants a revoke ended (docs/contract.md §4 "Revocation and maximum hold") */
export interface RevokedView {
  name: string;
  revoked: { session_id: string; fencing_token: number }[];
}
/** docs/contract.md §4 "Semaphores"; a service without it answers their routes 404 */
export interface SemaphoreApi {
  acquire(name: string, p: { sessionId?: string; ttlMs?: number; limit: number; permits: number; waitMs: number; owner?: string; maxHoldMs?: number }, ctx: RequestContext): Promise<Result<SemaphoreGrantView>>;
  /** the caller has the `admin` right on the name (checked by the route) */
  revoke?(name: string, sessionId: string | undefined, ctx: RequestContext): Promise<Result<RevokedView>>;
  release(name: string, sessionId: string, ctx: RequestContext): Promise<Result<{ name: string; released: true }>>;
  setLimit(name: string, limit: number, ctx: RequestContext): Promise<Result<{ name: string; limit: number }>>;
  get(name: string, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<Result<SemaphoreView>>;
  /** semaphores with holders or waiters whose name starts with prefix, sorted by name, at most limit */
  list(prefix: string, limit: number, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<Result<SemaphoreView[]>>;
}
/** docs/contract.md §4 "Leader election" */
export interface ElectionLeaderView {
  session_id: string;
  value: string;
  fencing_token: number;
}
export interface CampaignView {
  name: string;
  session_id: string;
  value: string;
  fencing_token: number;
  ttl_ms: number;
  /** as GrantView.max_hold_ms */
  max_hold_ms?: number;
}
export interface ElectionView {
  name: string;
  leader: ElectionLeaderView | null;
}
/** an election as the status page lists it: its leader and how many wait to lead */
export interface ElectionListItem {
  name: string;
  leader: ElectionLeaderView & { owner: string };
  /** requests queued behind the leader (campaigns, and plain acquires of the name) */
  waiters: number;
}
/** docs/contract.md §4 "Leader election"; a service without it answers their routes 404 */
export interface ElectionApi {
  campaign(name: string, p: { sessionId?: string; ttlMs?: number; value: string; waitMs: number; owner?: string; maxHoldMs?: number }, ctx: RequestContext): Promise<Result<CampaignView>>;
  proclaim(name: string, sessionId: string, value: string, ctx: RequestContext): Promise<Result<{ name: string; value: string }>>;
  resign(name: string, sessionId: string, ctx: RequestContext): Promise<Result<{ name: string; resigned: true }>>;
  get(name: string, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<Result<ElectionView>>;
  /** elections that have a leader, sorted by name (the status page; optional for fakes) */
  list?(prefix: string, limit: number, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<Result<ElectionListItem[]>>;
}
/** one grant a keepalive answer lists (docs/api.md "Keepalive answers"): the client
 *  learns a revoke or a max-hold end from its keepalive, without another read */
export interface KeepaliveGrantView {
  kind: 'lock' | 'semaphore' | 'election';
  name: string;
  fencing_token: number;
  mode?: 'shared';
  /** requests waiting on the name (docs/contract.md §5 "Contention") */
  waiters: number;
}
/** an acquire-all's answer (docs/contract.md §5 "Lock sets"): grants in the request's order */
export interface LockSetGrantView {
  session_id: string;
  ttl_ms: number;
  /** max_hold_ms: as GrantView's, per grant (a name the session already held keeps its own) */
  grants: { name: string; fencing_token: number; max_hold_ms?: number }[];
  /** present on a shared set */
  mode?: 'shared';
}
/** docs/contract.md §5 "Lock sets"; a service without it answers their routes 404 */
export interface LockSetApi {
  acquireAll(names: string[], p: { sessionId?: string; ttlMs?: number; waitMs: number; owner?: string; mode?: 'exclusive' | 'shared'; maxHoldMs?: number }, ctx: RequestContext): Promise<Result<LockSetGrantView>>;
  releaseAll(names: string[], sessionId: string, ctx: RequestContext): Promise<Result<{ released: string[] }>>;
}
export interface KeepaliveView {
  session_id: string;
  ttl_ms: number;
  /** this version's extension of the contract: the session's grants, as of the keepalive's read barrier */
  grants?: KeepaliveGrantView[];
}
export interface SessionView {
  session_id: string;
  owner: string;
  ttl_ms: number;
  locks: string[];
}
export interface MemberView {
  id: string;
  api: string;
  peer: string;
  role?: 'leader' | 'follower' | 'learner' | 'candidate';
  match_index?: number;
  lag?: number;
  /** on learners: true when the leader will promote it to voter by itself once it has
   *  caught up (added without `learner: true`), false when it stays a learner */
  promotion_pending?: boolean;
}
export interface ClusterView {
  /** the cluster's name (cluster.config.json "cluster"): a joining node checks it */
  cluster?: string;
  node_id: string;
  role: 'leader' | 'follower' | 'candidate' | 'learner';
  term: number;
  leader_id: string | null;
  commit_index: number;
  applied_index: number;
  members: MemberView[];
  /** present while this node is not ready: the reason its /readyz gives (docs/api.md "Readiness") */
  not_ready?: string;
}

export interface Routing {
  isLeader: boolean;
  /** the leader's advertised API URL, when one is known */
  leaderApi: string | null;
}

export interface LockService {
  routing(): Routing;
  readonly semaphores?: SemaphoreApi;
  /** leader election (docs/contract.md §4 "Leader election"); absent: routes answer 404 */
  readonly elections?: ElectionApi;
  /** lock sets (docs/contract.md §5); absent: routes answer 404 */
  readonly lockSets?: LockSetApi;
  /** /readyz: knows a leader and has applied up to the commit index it knows */
  ready(): boolean;
  /** why /readyz answers 503 beyond ready() (e.g. the node was removed), or null */
  notReadyReason?(): string | null;

  openSession(p: { ttlMs?: number; owner?: string; lockDelayMs?: number }, ctx: RequestContext): Promise<Result<{ session_id: string; ttl_ms: number }>>;
  keepalive(sessionId: string, ctx: RequestContext): Promise<Result<KeepaliveView>>;
  getSession(sessionId: string, ctx: RequestContext): Promise<Result<SessionView>>;
  closeSession(sessionId: string, ctx: RequestContext): Promise<Result<{ released: string[] }>>;

  acquire(name: string, p: { sessionId?: string; ttlMs?: number; waitMs: number; owner?: string; mode?: 'exclusive' | 'shared'; maxHoldMs?: number }, ctx: RequestContext): Promise<Result<GrantView>>;
  /** take the grant of sessionId (or every grant) away, without lock-delay; the caller has
   *  the `admin` right on the name (checked by the route). Absent: the route answers 404 */
  revoke?(name: string, sessionId: string | undefined, ctx: RequestContext): Promise<Result<RevokedView>>;
  renew(name: string, sessionId: string, ctx: RequestContext): Promise<Result<GrantView>>;
  release(name: string, sessionId: string, fencingToken: number | undefined, ctx: RequestContext): Promise<Result<{ name: string; released: true }>>;
  /** consistency 'stale' answers from local state without a quorum round (allowed on followers) */
  getLock(name: string, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<Result<LockView>>;
  listLocks(prefix: string, limit: number, consistency: 'linearizable' | 'stale', ctx: RequestContext): Promise<Result<LockView[]>>;
  checkToken(name: string, fencingToken: number, ctx: RequestContext): Promise<Result<{ name: string; current: boolean }>>;

  cluster(): ClusterView;
  /** learner: add as a learner only (promote later); default: learner, then voter once caught up */
  addMember(m: { id: string; api: string; peer: string; learner?: boolean }, ctx: RequestContext): Promise<Result<ClusterView>>;
  removeMember(id: string, ctx: RequestContext): Promise<Result<ClusterView>>;
  /** promote a learner to voter once caught up (POST /v1/cluster/members/{id}/promote) */
  promoteMember?(id: string, ctx: RequestContext): Promise<Result<ClusterView>>;
  transferLeadership(to: string | undefined, ctx: RequestContext): Promise<Result<{ leader_id: string }>>;
  /** The longest `op` may take on the leader before it answers (its own timeouts), or
   *  undefined for the default. A follower relaying `op` waits this long plus the
   *  forwarding timeout, so it never gives up while the leader is still working. */
  leaderBudgetMs?(op: LeaderOp, waitMs: number): number | undefined;
}

/** Operations whose leader-side duration differs from a plain proposal's. */
export type LeaderOp = 'acquire' | 'addMember' | 'promoteMember' | 'removeMember' | 'transferLeadership';
