// The SDK's view of the REST answers (docs/contract.md §3 "REST API"), in camelCase, and
// the decoders that turn a JSON body into them. A body that lacks a field the contract
// promises is a `bad_response` error naming the field — a proxy page or a version skew must
// never become a fencing token of `undefined`.
import { decodeHolder, InvalidRequestError, RaftlockError, type HolderInfo } from './errors.js';

export type { HolderInfo };

export interface Grant {
  name: string;
  sessionId: string;
  fencingToken: number;
  ttlMs: number;
  /** 'shared' for a shared (read) grant (docs/contract.md §4) */
  mode: 'exclusive' | 'shared';
  /** the grant's maximum hold: at most how much longer it lasts, from the request's send
   *  (docs/contract.md §4 "Revocation and maximum hold"); absent without one, or from an
   *  older server */
  maxHoldLeftMs?: number;
}

/** A semaphore grant: `permits` of `limit`, with a token from the one global sequence. */
export interface SemaphoreGrantInfo {
  name: string;
  sessionId: string;
  fencingToken: number;
  ttlMs: number;
  permits: number;
  limit: number;
  /** as Grant.maxHoldLeftMs */
  maxHoldLeftMs?: number;
}

/** A campaign won (docs/contract.md §4 "Leader election"): a lock grant with the leader's value. */
export interface CampaignGrant {
  name: string;
  sessionId: string;
  value: string;
  fencingToken: number;
  ttlMs: number;
  /** as Grant.maxHoldLeftMs */
  maxHoldLeftMs?: number;
}

/** GET /v1/elections/{name}: the leader and its value, or null while none leads. */
export interface ElectionInfo {
  name: string;
  leader: LeaderInfo | null;
}
export interface LeaderInfo {
  sessionId: string;
  value: string;
  fencingToken: number;
}

export interface SessionGrant {
  sessionId: string;
  ttlMs: number;
}

/** one grant a keepalive answer lists (docs/api.md "Keepalive answers") */
export interface KeepaliveGrant {
  kind: 'lock' | 'semaphore' | 'election';
  name: string;
  fencingToken: number;
  mode?: 'shared';
  /** how many requests wait on the name (docs/contract.md §5 "Contention"); absent from older servers */
  waiters?: number;
}

/** POST /v1/locks/acquire-all (docs/contract.md §5 "Lock sets"): every name, in the request's order */
export interface LockSetGrantInfo {
  sessionId: string;
  ttlMs: number;
  /** maxHoldLeftMs: as Grant's, per grant */
  grants: { name: string; fencingToken: number; maxHoldLeftMs?: number }[];
  mode: 'exclusive' | 'shared';
}

export interface KeepaliveAnswer extends SessionGrant {
  /** the session's grants as of the keepalive; absent from a server that does not list them */
  grants?: KeepaliveGrant[];
}

export interface SessionInfo {
  sessionId: string;
  owner: string;
  ttlMs: number;
  locks: string[];
}

export interface LockInfo {
  name: string;
  held: boolean;
  /** the exclusive holder */
  holder?: HolderInfo;
  waiters: number;
  /** while held: the mode of its grants (docs/contract.md §4 "Shared (read) locks") */
  mode?: 'exclusive' | 'shared';
  /** while held: every holder in grant order (one exclusive, or the shared holders) */
  holders?: (HolderInfo & { mode: 'exclusive' | 'shared' })[];
}

/** GET /v1/semaphores/{name} (docs/contract.md §4 "Semaphores"); limit 0: idle */
export interface SemaphoreInfo {
  name: string;
  limit: number;
  inUse: number;
  /** in grant order */
  holders: { sessionId: string; owner: string; permits: number; fencingToken: number }[];
  /** in queue order, position 1 first */
  waiters: { sessionId: string; owner: string; permits: number; position: number }[];
}

export interface MemberInfo {
  id: string;
  api: string;
  peer: string;
  role?: string;
  matchIndex?: number;
  lag?: number;
  /** learners: the leader promotes it to voter by itself once caught up */
  promotionPending?: boolean;
}

export interface ClusterInfo {
  nodeId: string;
  role: string;
  term: number;
  leaderId: string | null;
  commitIndex: number;
  appliedIndex: number;
  members: MemberInfo[];
  /** present while the node is not ready: the reason its /readyz gives (e.g. "bootstrapping: waiting for n4") */
  notReady?: string;
}

type Obj = Record<string, unknown>;

function obj(v: unknown, what: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(what, 'is not a JSON object');
  return v as Obj;
}
function str(o: Obj, k: string, what: string): string {
  const v = o[k];
  if (typeof v !== 'string') throw bad(what, `field ${k} is missing or not a string`);
  return v;
}
function num(o: Obj, k: string, what: string): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(what, `field ${k} is missing or not a number`);
  return v;
}
/** `g` with the answer's max_hold_ms (a grant's remaining maximum hold) when it has one */
function withHoldLeft<T extends { maxHoldLeftMs?: number }>(g: T, o: Obj, what: string): T {
  if (o['max_hold_ms'] === undefined) return g;
  const left = num(o, 'max_hold_ms', what);
  if (left < 0) throw bad(what, `max_hold_ms ${left} is negative`);
  g.maxHoldLeftMs = left;
  return g;
}
function bad(what: string, problem: string): RaftlockError {
  return new RaftlockError('bad_response', `unexpected answer to ${what}: ${problem}`);
}

export function decodeGrant(v: unknown, what: string): Grant {
  const o = obj(v, what);
  const g: Grant = { name: str(o, 'name', what), sessionId: str(o, 'session_id', what), fencingToken: num(o, 'fencing_token', what), ttlMs: num(o, 'ttl_ms', what), mode: o['mode'] === 'shared' ? 'shared' : 'exclusive' };
  if (!Number.isSafeInteger(g.fencingToken) || g.fencingToken < 1) throw bad(what, `fencing_token ${g.fencingToken} is not a positive integer`);
  return withHoldLeft(g, o, what);
}

/** an acquire-all's answer; `names` are the request's, which the grants must match one to one */
export function decodeLockSetGrant(v: unknown, names: readonly string[], what: string): LockSetGrantInfo {
  const o = obj(v, what);
  if (!Array.isArray(o.grants)) throw bad(what, 'field grants is not a list');
  const grants = o.grants.map((x) => {
    const g = obj(x, what);
    const t = num(g, 'fencing_token', what);
    if (!Number.isSafeInteger(t) || t < 1) throw bad(what, `fencing_token ${t} is not a positive integer`);
    const row: LockSetGrantInfo['grants'][number] = { name: str(g, 'name', what), fencingToken: t };
    return withHoldLeft(row, g, what);
  });
  // a grant of another name, or one missing, would hand out a token for the wrong lock
  if (grants.length !== names.length || grants.some((g, i) => g.name !== names[i])) throw bad(what, `grants name ${grants.map((g) => g.name).join(', ')}, not the requested ${names.join(', ')}`);
  return { sessionId: str(o, 'session_id', what), ttlMs: num(o, 'ttl_ms', what), grants, mode: o['mode'] === 'shared' ? 'shared' : 'exclusive' };
}

export function decodeCampaignGrant(v: unknown, what: string): CampaignGrant {
  const o = obj(v, what);
  const g: CampaignGrant = { name: str(o, 'name', what), sessionId: str(o, 'session_id', what), value: str(o, 'value', what), fencingToken: num(o, 'fencing_token', what), ttlMs: num(o, 'ttl_ms', what) };
  if (!Number.isSafeInteger(g.fencingToken) || g.fencingToken < 1) throw bad(what, `fencing_token ${g.fencingToken} is not a positive integer`);
  return withHoldLeft(g, o, what);
}

/** the contract's `leader` object, or null; undefined when absent or malformed */
export function decodeLeader(v: unknown): LeaderInfo | null | undefined {
  if (v === null) return null;
  if (typeof v !== 'object' || v === undefined) return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.session_id !== 'string' || typeof o.value !== 'string' || typeof o.fencing_token !== 'number') return undefined;
  return { sessionId: o.session_id, value: o.value, fencingToken: o.fencing_token };
}

export function decodeElection(v: unknown, what: string): ElectionInfo {
  const o = obj(v, what);
  const leader = decodeLeader(o['leader']);
  if (leader === undefined) throw bad(what, 'no "leader" (an object with session_id, value, fencing_token, or null)');
  return { name: str(o, 'name', what), leader };
}

export function decodeSemaphoreGrant(v: unknown, what: string): SemaphoreGrantInfo {
  const o = obj(v, what);
  const g: SemaphoreGrantInfo = { name: str(o, 'name', what), sessionId: str(o, 'session_id', what), fencingToken: num(o, 'fencing_token', what), ttlMs: num(o, 'ttl_ms', what), permits: num(o, 'permits', what), limit: num(o, 'limit', what) };
  if (!Number.isSafeInteger(g.fencingToken) || g.fencingToken < 1) throw bad(what, `fencing_token ${g.fencingToken} is not a positive integer`);
  return withHoldLeft(g, o, what);
}

export function decodeSessionGrant(v: unknown, what: string): SessionGrant {
  const o = obj(v, what);
  return { sessionId: str(o, 'session_id', what), ttlMs: num(o, 'ttl_ms', what) };
}

export function decodeKeepalive(v: unknown, what: string): KeepaliveAnswer {
  const o = obj(v, what);
  const g: KeepaliveAnswer = decodeSessionGrant(v, what);
  if (o.grants === undefined) return g;
  if (!Array.isArray(o.grants)) throw bad(what, 'field grants is not a list');
  g.grants = o.grants.map((x: unknown) => {
    const r = obj(x, what);
    const kind = r.kind;
    if (kind !== 'lock' && kind !== 'semaphore' && kind !== 'election') throw bad(what, 'a grant without a known kind');
    return { kind, name: str(r, 'name', what), fencingToken: num(r, 'fencing_token', what), ...(r.mode === 'shared' ? { mode: 'shared' as const } : {}), ...(typeof r.waiters === 'number' && Number.isSafeInteger(r.waiters) && r.waiters >= 0 ? { waiters: r.waiters } : {}) };
  });
  return g;
}

export function decodeSessionInfo(v: unknown, what: string): SessionInfo {
  const o = obj(v, what);
  const locks = o.locks;
  if (!Array.isArray(locks) || !locks.every((l) => typeof l === 'string')) throw bad(what, 'field locks is not a list of names');
  return { sessionId: str(o, 'session_id', what), owner: typeof o.owner === 'string' ? o.owner : '', ttlMs: num(o, 'ttl_ms', what), locks: locks as string[] };
}

export function decodeLockInfo(v: unknown, what: string): LockInfo {
  const o = obj(v, what);
  if (typeof o.held !== 'boolean') throw bad(what, 'field held is missing');
  const info: LockInfo = { name: str(o, 'name', what), held: o.held, waiters: typeof o.waiters === 'number' ? o.waiters : 0 };
  const holder = decodeHolder(o.holder);
  if (holder) info.holder = holder;
  if (o.mode === 'exclusive' || o.mode === 'shared') info.mode = o.mode;
  if (Array.isArray(o.holders)) {
    info.holders = o.holders.map((x) => {
      const h = decodeHolder(x);
      if (!h) throw bad(what, 'an entry of holders lacks session_id or fencing_token');
      return { ...h, mode: (x as Obj).mode === 'shared' ? 'shared' : 'exclusive' };
    });
  }
  return info;
}

export function decodeSemaphoreInfo(v: unknown, what: string): SemaphoreInfo {
  const o = obj(v, what);
  if (!Array.isArray(o.holders) || !Array.isArray(o.waiters)) throw bad(what, 'field holders or waiters is not a list');
  const holders = o.holders.map((x) => {
    const h = obj(x, what);
    return { sessionId: str(h, 'session_id', what), owner: typeof h.owner === 'string' ? h.owner : '', permits: num(h, 'permits', what), fencingToken: num(h, 'fencing_token', what) };
  });
  const waiters = o.waiters.map((x) => {
    const w = obj(x, what);
    return { sessionId: str(w, 'session_id', what), owner: typeof w.owner === 'string' ? w.owner : '', permits: num(w, 'permits', what), position: num(w, 'position', what) };
  });
  return { name: str(o, 'name', what), limit: num(o, 'limit', what), inUse: num(o, 'in_use', what), holders, waiters };
}

export function decodeSemaphoreList(v: unknown, what: string): SemaphoreInfo[] {
  const o = obj(v, what);
  if (!Array.isArray(o.semaphores)) throw bad(what, 'field semaphores is not a list');
  return o.semaphores.map((s) => decodeSemaphoreInfo(s, what));
}

export function decodeLockList(v: unknown, what: string): LockInfo[] {
  const o = obj(v, what);
  if (!Array.isArray(o.locks)) throw bad(what, 'field locks is not a list');
  return o.locks.map((l) => decodeLockInfo(l, what));
}

export function decodeCluster(v: unknown, what: string): ClusterInfo {
  const o = obj(v, what);
  if (!Array.isArray(o.members)) throw bad(what, 'field members is not a list');
  const members = o.members.map((m): MemberInfo => {
    const mo = obj(m, what);
    const out: MemberInfo = { id: str(mo, 'id', what), api: typeof mo.api === 'string' ? mo.api : '', peer: typeof mo.peer === 'string' ? mo.peer : '' };
    if (typeof mo.role === 'string') out.role = mo.role;
    if (typeof mo.match_index === 'number') out.matchIndex = mo.match_index;
    if (typeof mo.lag === 'number') out.lag = mo.lag;
    if (typeof mo.promotion_pending === 'boolean') out.promotionPending = mo.promotion_pending;
    return out;
  });
  return {
    nodeId: str(o, 'node_id', what),
    role: str(o, 'role', what),
    term: num(o, 'term', what),
    leaderId: typeof o.leader_id === 'string' ? o.leader_id : null,
    commitIndex: num(o, 'commit_index', what),
    appliedIndex: num(o, 'applied_index', what),
    members,
    ...(typeof o.not_ready === 'string' ? { notReady: o.not_ready } : {}),
  };
}

/** Percent-encodes a lock name as ONE path segment ("/" becomes %2F), so a name ending
 *  in an action word ("jobs/check") is never mistaken for that action (docs/api.md). */
export function lockPath(name: string, action?: 'acquire' | 'renew' | 'release' | 'check' | 'revoke'): string {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidRequestError('invalid_request', 'lock name must be a non-empty string');
  return `/v1/locks/${encodeURIComponent(name)}${action ? `/${action}` : ''}`;
}

/** As lockPath, for /v1/semaphores/{name} (docs/contract.md §4 "Semaphores"). */
export function semaphorePath(name: string, action?: 'acquire' | 'release' | 'limit' | 'revoke'): string {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidRequestError('invalid_request', 'semaphore name must be a non-empty string');
  return `/v1/semaphores/${encodeURIComponent(name)}${action ? `/${action}` : ''}`;
}

/** As lockPath, for /v1/elections/{name} (docs/contract.md §4 "Leader election"). */
export function electionPath(name: string, action?: 'campaign' | 'proclaim' | 'resign'): string {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidRequestError('invalid_request', 'election name must be a non-empty string');
  return `/v1/elections/${encodeURIComponent(name)}${action ? `/${action}` : ''}`;
}

export function sessionPath(id: string, suffix = ''): string {
  if (typeof id !== 'string' || id.length === 0) throw new InvalidRequestError('invalid_request', 'session id must be a non-empty string');
  return `/v1/sessions/${encodeURIComponent(id)}${suffix}`;
}
