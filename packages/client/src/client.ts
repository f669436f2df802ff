// RaftlockClient: the REST contract (docs/contract.md §3 "REST API") as typed calls, plus
// the safe patterns on top — sessions that prove their lease (session.ts), locks with an
// abort signal (lock.ts), and withLock (acquire, run, release in finally, abort on loss).
// It fixes what users of other lock clients complain about: locks silently lost (the signal
// aborts before the server could expire the lease), retries applied twice (every mutation
// carries one Idempotency-Key across all its retries), failover that ignores Retry-After.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { InvalidRequestError, LockLostError } from './errors.js';
import { normalizeEndpoint } from './endpoints.js';
import { HttpCaller, type Answer, type CallSpec } from './http.js';
import type { Lock } from './lock.js';
import type { SemaphoreGrant } from './semaphore.js';
import type { Leadership } from './leadership.js';
import type { LockSet } from './lock-set.js';
import { Session, type SessionCampaignOptions, type SessionLockOptions, type SessionSemaphoreOptions } from './session.js';
import { observeLeaders, watchEvents, type Leader, type WatchEvent, type WatchOptions, type WatchSynced } from './watch.js';
import {
  decodeCampaignGrant, decodeCluster, decodeLockSetGrant, decodeElection, decodeGrant, decodeKeepalive, decodeLockInfo, decodeLockList, decodeSemaphoreGrant, decodeSemaphoreInfo, decodeSemaphoreList, decodeSessionGrant, decodeSessionInfo, electionPath, lockPath, semaphorePath, sessionPath,
  type CampaignGrant, type ClusterInfo, type LockSetGrantInfo, type ElectionInfo, type Grant, type KeepaliveAnswer, type LockInfo, type SemaphoreGrantInfo, type SemaphoreInfo, type SessionGrant, type SessionInfo,
} from './wire.js';

export interface ClientOptions {
  /** API URLs of the cluster's nodes (any subset works; more gives failover), or a comma-separated string */
  endpoints: readonly string[] | string;
  /** budget of one HTTP attempt in ms, on top of any wait (default 5000) */
  timeoutMs?: number;
  /** budget of one call across its retries and failovers in ms (default 15000) */
  retryBudgetMs?: number;
  /** bearer token, when the cluster has auth on */
  token?: string;
  /** TLS material for https:// endpoints (CA of the cluster, client cert for mutual TLS) */
  tls?: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer };
  /** where recoverable problems are reported (a failed keepalive, a failed release), and,
   *  with `err` undefined, each grant a late copy of a given-up acquire made that a session
   *  released (docs/client.md "A grant that arrives after the cleanup"); default: nowhere */
  onWarning?: (message: string, err?: unknown) => void;
  /** send writes, keepalives and linearizable reads to the leader the answers name (its URL
   *  must be one of `endpoints`), sparing a follower's relay; false: round-robin over every
   *  endpoint (default true; docs/client.md "Leader routing") */
  leaderRouting?: boolean;
  /** @internal tests: monotonic clock (ms), randomness, undici dispatcher */
  now?: () => number;
  random?: () => number;
  dispatcher?: Dispatcher;
}

export interface OpenSessionOptions {
  ttlMs?: number;
  owner?: string;
  lockDelayMs?: number;
  signal?: AbortSignal;
  /** reuse a key to make a retry of this exact call safe (default: a fresh UUID) */
  idempotencyKey?: string;
}

export interface SessionOptions extends OpenSessionOptions {
  /** see Session: subtracted from every proven deadline (default ttl/10, 20 ms – 2 s) */
  safetyMarginMs?: number;
  keepaliveIntervalMs?: number;
}

export interface AcquireOptions {
  /** hold it in this session; without one the server opens a new session with ttlMs */
  sessionId?: string;
  ttlMs?: number;
  waitMs?: number;
  owner?: string;
  signal?: AbortSignal;
  idempotencyKey?: string;
  /** 'shared': a shared (read) lock (docs/contract.md §4 "Shared (read) locks") */
  mode?: 'exclusive' | 'shared';
  /** max_hold_ms: the server frees the grant this long after it was made (docs/contract.md §4 "Revocation and maximum hold") */
  maxHoldMs?: number;
}

export interface RevokeOptions {
  /** revoke this session's grant only (default: every grant of the name) */
  sessionId?: string;
  /** 'semaphore': revoke grants of semaphore `name` (default 'lock') */
  kind?: 'lock' | 'semaphore';
  signal?: AbortSignal;
  idempotencyKey?: string;
}

export interface RevokedGrant {
  sessionId: string;
  fencingToken: number;
}

export interface ReadOptions {
  /** 'stale' answers from the contacted node without a quorum round */
  consistency?: 'linearizable' | 'stale';
  signal?: AbortSignal;
}

/** listLocks and listSemaphores: names starting with `prefix`, at most `limit` (1-10000;
 *  the server's default is 1000) */
export interface ListOptions extends ReadOptions {
  prefix?: string;
  limit?: number;
}

export interface WithLockContext {
  fencingToken: number;
  /** aborts when the lock can no longer be proven held: stop touching the resource */
  signal: AbortSignal;
  sessionId: string;
  lock: Lock;
}

export interface WithLocksContext {
  /** name → fencing token: pass each name's token to the writes under that name */
  fencingTokens: Readonly<Record<string, number>>;
  /** aborts when ANY of the locks can no longer be proven held: stop touching the resources */
  signal: AbortSignal;
  sessionId: string;
  locks: LockSet;
}

export interface WithLockOptions extends SessionLockOptions {
  /** ttl of the session withLock opens (ignored when `session` is given) */
  ttlMs?: number;
  /** use this open session instead of opening one */
  session?: Session;
  safetyMarginMs?: number;
}

export interface SemaphoreAcquireOptions {
  /** hold it in this session; without one the server opens a new session with ttlMs */
  sessionId?: string;
  ttlMs?: number;
  limit: number;
  permits?: number;
  waitMs?: number;
  owner?: string;
  signal?: AbortSignal;
  idempotencyKey?: string;
  maxHoldMs?: number;
}

export interface WithSemaphoreContext {
  fencingToken: number;
  permits: number;
  limit: number;
  /** aborts when the grant can no longer be proven held: stop touching the resource */
  signal: AbortSignal;
  sessionId: string;
  grant: SemaphoreGrant;
}

export interface WithSemaphoreOptions extends SessionSemaphoreOptions {
  /** ttl of the session withSemaphore opens (ignored when `session` is given) */
  ttlMs?: number;
  /** use this open session instead of opening one */
  session?: Session;
  safetyMarginMs?: number;
}

export interface CampaignOptions extends SessionCampaignOptions {
  /** campaign in this open session; without one, campaign() opens a session (ttlMs) that
   *  the leadership owns: resign() closes it, and losing it ends the leadership */
  session?: Session;
  ttlMs?: number;
  safetyMarginMs?: number;
}

export interface CampaignRequestOptions {
  /** campaign in this session; without one the server opens a new session with ttlMs */
  sessionId?: string;
  ttlMs?: number;
  waitMs?: number;
  owner?: string;
  signal?: AbortSignal;
  idempotencyKey?: string;
  /** max_hold_ms (docs/contract.md §4 "Revocation and maximum hold") */
  maxHoldMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_RETRY_BUDGET_MS = 15_000;

export class RaftlockClient {
  private readonly http: HttpCaller;
  private readonly clock: () => number;
  private readonly rand: () => number;
  private readonly onWarning: ((message: string, err?: unknown) => void) | undefined;

  constructor(opts: ClientOptions) {
    const endpoints = typeof opts.endpoints === 'string' ? opts.endpoints.split(',').map((s) => s.trim()).filter(Boolean) : [...opts.endpoints];
    if (endpoints.length === 0) throw new InvalidRequestError('invalid_request', 'RaftlockClient: endpoints must name at least one API URL');
    this.clock = opts.now ?? (() => performance.now());
    this.rand = opts.random ?? Math.random;
    this.onWarning = opts.onWarning;
    const timeoutMs = positive(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, 'timeoutMs');
    const retryBudgetMs = positive(opts.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS, 'retryBudgetMs');
    this.http = new HttpCaller({
      endpoints, timeoutMs, retryBudgetMs, now: this.clock, random: this.rand,
      ...(opts.leaderRouting !== undefined ? { leaderRouting: opts.leaderRouting } : {}),
      ...(opts.token !== undefined ? { token: opts.token } : {}),
      ...(opts.tls !== undefined ? { tls: opts.tls } : {}),
      ...(opts.dispatcher !== undefined ? { dispatcher: opts.dispatcher } : {}),
    });
  }

  get endpoints(): string[] {
    return this.http.endpoints.urls;
  }

  /** Closes the connection pools. Sessions still open are not closed on the server. */
  async close(): Promise<void> {
    await this.http.close();
  }

  // ---- sessions ---------------------------------------------------------------------

  /** POST /v1/sessions. A one-shot: nothing keeps it alive (see session() for that). */
  async openSession(o: OpenSessionOptions = {}): Promise<SessionGrant & { sentAt: number }> {
    const body: Record<string, unknown> = {};
    if (o.ttlMs !== undefined) body.ttl_ms = o.ttlMs;
    if (o.owner !== undefined) body.owner = o.owner;
    if (o.lockDelayMs !== undefined) body.lock_delay_ms = o.lockDelayMs;
    const a = await this.mutate({ method: 'POST', path: '/v1/sessions', body, signal: o.signal }, o.idempotencyKey);
    return { ...decodeSessionGrant(a.body, 'open session'), sentAt: a.sentAt };
  }

  /** POST /v1/sessions/{id}/keepalive. `sentAt` (client clock) is the base of the renewed
   *  lease; `grants` (from servers that list them) the session's grants as of the keepalive. */
  async keepalive(sessionId: string, o: { signal?: AbortSignal; deadline?: number } = {}): Promise<KeepaliveAnswer & { sentAt: number }> {
    const a = await this.http.call({ method: 'POST', path: sessionPath(sessionId, '/keepalive'), retry: 'renewal', ...opt('signal', o.signal), ...opt('deadline', o.deadline) });
    return { ...decodeKeepalive(a.body, 'keepalive'), sentAt: a.sentAt };
  }

  async getSession(sessionId: string, o: { signal?: AbortSignal } = {}): Promise<SessionInfo> {
    const a = await this.http.call({ method: 'GET', path: sessionPath(sessionId), retry: 'read', ...opt('signal', o.signal) });
    return decodeSessionInfo(a.body, 'get session');
  }

  /** DELETE /v1/sessions/{id}: ends it; its locks are released at once. */
  async closeSession(sessionId: string, o: { signal?: AbortSignal; budgetMs?: number; idempotencyKey?: string } = {}): Promise<{ released: string[] }> {
    const deadline = o.budgetMs !== undefined ? this.clock() + o.budgetMs : undefined;
    const a = await this.mutate({ method: 'DELETE', path: sessionPath(sessionId), signal: o.signal, ...opt('deadline', deadline) }, o.idempotencyKey);
    const released = (a.body as { released?: unknown } | undefined)?.released;
    return { released: Array.isArray(released) ? released.filter((x): x is string => typeof x === 'string') : [] };
  }

  /**
   * A session kept alive by keepalives, that tells you (`lost`, `signal`) the moment it can
   * no longer prove its lease. Close it when done.
   */
  async session(o: SessionOptions = {}): Promise<Session> {
    const g = await this.openSession(o);
    const timing = { ttlMs: g.ttlMs, ...opt('safetyMarginMs', o.safetyMarginMs), ...opt('keepaliveIntervalMs', o.keepaliveIntervalMs) };
    let s: Session;
    try {
      s = new Session(this.sessionHost(), g.sessionId, timing, g.sentAt);
    } catch (err) {
      await this.closeSession(g.sessionId).catch(() => undefined);
      throw err;
    }
    return s;
  }

  // ---- locks --------------------------------------------------------------------------

  /** POST /v1/locks/{name}/acquire. Throws LockHeldError when held past waitMs. */
  async acquire(name: string, o: AcquireOptions = {}): Promise<Grant & { sentAt: number }> {
    const waitMs = o.waitMs ?? 0;
    const base: Record<string, unknown> = {};
    if (o.sessionId !== undefined) base.session_id = o.sessionId;
    if (o.ttlMs !== undefined) base.ttl_ms = o.ttlMs;
    if (o.owner !== undefined) base.owner = o.owner;
    if (o.mode === 'shared') base.mode = 'shared';
    if (o.maxHoldMs !== undefined) base.max_hold_ms = o.maxHoldMs;
    // A retry (same Idempotency-Key) asks only for the wait that is left.
    const body = (elapsed: number): Record<string, unknown> => ({ ...base, wait_ms: Math.max(0, Math.round(waitMs - elapsed)) });
    const a = await this.mutate({ method: 'POST', path: lockPath(name, 'acquire'), body, waitMs, signal: o.signal }, o.idempotencyKey);
    return { ...decodeGrant(a.body, `acquire ${name}`), sentAt: a.sentAt };
  }

  /**
   * POST /v1/locks/acquire-all (docs/contract.md §5 "Lock sets"): every name granted together,
   * or none. Throws LockHeldError (with `blocked`) when not granted within waitMs,
   * DeadlockError when waiting would close a cycle. One request (session.lockAll and
   * withLocks are the safe patterns).
   */
  async acquireAll(names: readonly string[], o: AcquireOptions = {}): Promise<LockSetGrantInfo & { sentAt: number }> {
    const waitMs = o.waitMs ?? 0;
    const base: Record<string, unknown> = { names: [...names] };
    if (o.sessionId !== undefined) base.session_id = o.sessionId;
    if (o.ttlMs !== undefined) base.ttl_ms = o.ttlMs;
    if (o.owner !== undefined) base.owner = o.owner;
    if (o.mode === 'shared') base.mode = 'shared';
    if (o.maxHoldMs !== undefined) base.max_hold_ms = o.maxHoldMs;
    // A retry (same Idempotency-Key) asks only for the wait that is left.
    const body = (elapsed: number): Record<string, unknown> => ({ ...base, wait_ms: Math.max(0, Math.round(waitMs - elapsed)) });
    const a = await this.mutate({ method: 'POST', path: '/v1/locks/acquire-all', body, waitMs, signal: o.signal }, o.idempotencyKey);
    return { ...decodeLockSetGrant(a.body, names, `acquire-all ${names.join(', ')}`), sentAt: a.sentAt };
  }

  /** POST /v1/locks/release-all: releases each of these names the session holds, and ends
   *  its waits on them; answers the names it released. */
  async releaseAll(names: readonly string[], sessionId: string, o: { signal?: AbortSignal; idempotencyKey?: string; budgetMs?: number } = {}): Promise<{ released: string[] }> {
    const deadline = o.budgetMs !== undefined ? this.clock() + o.budgetMs : undefined;
    const a = await this.mutate({ method: 'POST', path: '/v1/locks/release-all', body: { names: [...names], session_id: sessionId }, signal: o.signal, ...opt('deadline', deadline) }, o.idempotencyKey);
    const released = (a.body as { released?: unknown } | undefined)?.released;
    return { released: Array.isArray(released) ? released.filter((x): x is string => typeof x === 'string') : [] };
  }

  /** POST /v1/locks/{name}/renew: renews the holder's session; NotHolderError if it lost the lock. */
  async renew(name: string, sessionId: string, o: { signal?: AbortSignal } = {}): Promise<Grant & { sentAt: number }> {
    const a = await this.http.call({ method: 'POST', path: lockPath(name, 'renew'), body: { session_id: sessionId }, retry: 'renewal', ...opt('signal', o.signal) });
    return { ...decodeGrant(a.body, `renew ${name}`), sentAt: a.sentAt };
  }

  /** POST /v1/locks/{name}/release. With a token, a stale holder gets NotHolderError. */
  async release(name: string, sessionId: string, fencingToken?: number, o: { signal?: AbortSignal; idempotencyKey?: string; budgetMs?: number } = {}): Promise<void> {
    const body: Record<string, unknown> = { session_id: sessionId };
    if (fencingToken !== undefined) body.fencing_token = fencingToken;
    const deadline = o.budgetMs !== undefined ? this.clock() + o.budgetMs : undefined;
    await this.mutate({ method: 'POST', path: lockPath(name, 'release'), body, signal: o.signal, ...opt('deadline', deadline) }, o.idempotencyKey);
  }

  async getLock(name: string, o: ReadOptions = {}): Promise<LockInfo> {
    const q = o.consistency === 'stale' ? '?consistency=stale' : '';
    const a = await this.http.call({ method: 'GET', path: lockPath(name) + q, retry: 'read', anyNode: q !== '', ...opt('signal', o.signal) });
    return decodeLockInfo(a.body, `get ${name}`);
  }

  /** GET /v1/locks: held locks whose name starts with `prefix`, sorted by name */
  async listLocks(o: ListOptions = {}): Promise<LockInfo[]> {
    const a = await this.http.call({ method: 'GET', path: `/v1/locks${listQuery(o)}`, retry: 'read', anyNode: o.consistency === 'stale', ...opt('signal', o.signal) });
    return decodeLockList(a.body, 'list locks');
  }

  /** GET /v1/locks/{name}/check: does `fencingToken` still hold `name`? (linearizable) */
  async checkToken(name: string, fencingToken: number, o: { signal?: AbortSignal } = {}): Promise<boolean> {
    if (!Number.isSafeInteger(fencingToken) || fencingToken < 1) throw new InvalidRequestError('invalid_request', `fencing token must be a positive integer, got ${fencingToken}`);
    const a = await this.http.call({ method: 'GET', path: `${lockPath(name, 'check')}?fencing_token=${fencingToken}`, retry: 'read', ...opt('signal', o.signal) });
    const current = (a.body as { current?: unknown } | undefined)?.current;
    if (typeof current !== 'boolean') throw new InvalidRequestError('bad_response', `unexpected answer to check ${name}: no boolean "current"`);
    return current;
  }

  /**
   * POST /v1/locks/{name}/revoke (or /v1/semaphores/{name}/revoke with kind 'semaphore'),
   * the `admin` right: takes the grant of `sessionId`, or every grant of the name, away at
   * once and without lock-delay; the next waiter gets it with a larger token. Returns the
   * grants revoked. NotHolderError when `sessionId` holds no grant of it.
   */
  async revoke(name: string, o: RevokeOptions = {}): Promise<RevokedGrant[]> {
    const body: Record<string, unknown> = o.sessionId === undefined ? {} : { session_id: o.sessionId };
    const path = o.kind === 'semaphore' ? semaphorePath(name, 'revoke') : lockPath(name, 'revoke');
    const a = await this.mutate({ method: 'POST', path, body, signal: o.signal }, o.idempotencyKey);
    const rows = (a.body as { revoked?: unknown } | undefined)?.revoked;
    if (!Array.isArray(rows)) throw new InvalidRequestError('bad_response', `unexpected answer to revoke ${name}: no "revoked" list`);
    return rows.map((r: unknown) => {
      const g = r as { session_id?: unknown; fencing_token?: unknown };
      if (typeof g.session_id !== 'string' || typeof g.fencing_token !== 'number') throw new InvalidRequestError('bad_response', `unexpected answer to revoke ${name}: a malformed grant`);
      return { sessionId: g.session_id, fencingToken: g.fencing_token };
    });
  }

  // ---- semaphores (docs/contract.md §4 "Semaphores") -----------------------------------

  /** POST /v1/semaphores/{name}/acquire. SemaphoreFullError when full past waitMs,
   *  LimitMismatchError when busy under another limit. */
  async acquireSemaphore(name: string, o: SemaphoreAcquireOptions): Promise<SemaphoreGrantInfo & { sentAt: number }> {
    const waitMs = o.waitMs ?? 0;
    const base: Record<string, unknown> = { limit: o.limit };
    if (o.permits !== undefined) base.permits = o.permits;
    if (o.sessionId !== undefined) base.session_id = o.sessionId;
    if (o.ttlMs !== undefined) base.ttl_ms = o.ttlMs;
    if (o.owner !== undefined) base.owner = o.owner;
    if (o.maxHoldMs !== undefined) base.max_hold_ms = o.maxHoldMs;
    // A retry (same Idempotency-Key) asks only for the wait that is left.
    const body = (elapsed: number): Record<string, unknown> => ({ ...base, wait_ms: Math.max(0, Math.round(waitMs - elapsed)) });
    const a = await this.mutate({ method: 'POST', path: semaphorePath(name, 'acquire'), body, waitMs, signal: o.signal }, o.idempotencyKey);
    return { ...decodeSemaphoreGrant(a.body, `acquire semaphore ${name}`), sentAt: a.sentAt };
  }

  /** GET /v1/semaphores/{name}: limit, permits in use, holders, waiters with positions
   *  (an idle semaphore: limit 0, nobody) */
  async getSemaphore(name: string, o: ReadOptions = {}): Promise<SemaphoreInfo> {
    const q = o.consistency === 'stale' ? '?consistency=stale' : '';
    const a = await this.http.call({ method: 'GET', path: semaphorePath(name) + q, retry: 'read', anyNode: q !== '', ...opt('signal', o.signal) });
    return decodeSemaphoreInfo(a.body, `get semaphore ${name}`);
  }

  /** GET /v1/semaphores: the semaphores with holders or waiters whose name starts with
   *  `prefix`, sorted by name (the same options as listLocks) */
  async listSemaphores(o: ListOptions = {}): Promise<SemaphoreInfo[]> {
    const a = await this.http.call({ method: 'GET', path: `/v1/semaphores${listQuery(o)}`, retry: 'read', anyNode: o.consistency === 'stale', ...opt('signal', o.signal) });
    return decodeSemaphoreList(a.body, 'list semaphores');
  }

  /** POST /v1/semaphores/{name}/release: gives back every permit the session holds of it
   *  (NotHolderError when it holds none). */
  async releaseSemaphore(name: string, sessionId: string, o: { signal?: AbortSignal; idempotencyKey?: string; budgetMs?: number } = {}): Promise<void> {
    const deadline = o.budgetMs !== undefined ? this.clock() + o.budgetMs : undefined;
    await this.mutate({ method: 'POST', path: semaphorePath(name, 'release'), body: { session_id: sessionId }, signal: o.signal, ...opt('deadline', deadline) }, o.idempotencyKey);
  }

  /**
   * Takes permits of semaphore `name`, runs `fn`, releases in `finally` — withLock's rules
   * (fn runs at most once; LockLostError if the grant was lost before fn settled).
   */
  async withSemaphore<T>(name: string, fn: (ctx: WithSemaphoreContext) => Promise<T> | T, o: WithSemaphoreOptions): Promise<T> {
    return this.withGrant(o, (session) => session.semaphore(name, { limit: o.limit, ...opt('permits', o.permits), ...opt('waitMs', o.waitMs), ...opt('owner', o.owner), ...opt('signal', o.signal), ...opt('maxHoldMs', o.maxHoldMs) }),
      (g, session) => fn({ fencingToken: g.fencingToken, permits: g.permits, limit: g.limit, signal: g.signal, sessionId: session.id, grant: g }));
  }

  // ---- watch -----------------------------------------------------------------------

  /**
   * GET /v1/watch as an async iterator (docs/client.md "Watching"): events of every lock,
   * semaphore and election whose name starts with `prefix`, in log order. Without
   * `fromIndex` it first gives one `state` event per current holder, then `synced`. It
   * reconnects to another endpoint when a node fails and resumes after the last event it
   * gave: no event is lost or given twice. Ends with CompactedError when no endpoint keeps
   * the resume point any more; `signal` (or leaving the loop) ends it.
   */
  watch(prefix = '', o: WatchOptions = {}): AsyncGenerator<WatchEvent | WatchSynced> {
    if (o.fromIndex !== undefined && !(Number.isSafeInteger(o.fromIndex) && o.fromIndex >= 0)) throw new InvalidRequestError('invalid_request', `watch: fromIndex must be a log index (an integer ≥ 0), got ${String(o.fromIndex)}`);
    return watchEvents({ http: this.http, now: this.clock, random: this.rand }, prefix, o);
  }

  /** The leader of election `name` each time it changes (null: nobody leads), starting
   *  with the current one; built on watch(name). */
  observe(name: string, o: Omit<WatchOptions, 'fromIndex'> = {}): AsyncGenerator<Leader | null> {
    return observeLeaders({ http: this.http, now: this.clock, random: this.rand }, name, o);
  }

  // ---- elections (docs/contract.md §4 "Leader election") --------------------------------

  /**
   * Campaigns in election `name` with `value` and returns the Leadership once this client
   * leads: `fencingToken` (the epoch followers' writes must carry), `signal` (aborts when
   * leadership is lost: session expiry, resign, revoke), `proclaim(value)`, `resign()`.
   * Waits up to `waitMs` (default 0: LockHeldError naming the `leader`). Without `session`
   * it opens one for the leadership, closed by resign() or when the campaign fails.
   */
  async campaign(name: string, value: string, o: CampaignOptions = {}): Promise<Leadership> {
    const own = o.session === undefined;
    const session = o.session ?? (await this.session({ ...opt('ttlMs', o.ttlMs), ...opt('owner', o.owner), ...opt('safetyMarginMs', o.safetyMarginMs), ...opt('signal', o.signal) }));
    try {
      return await session.campaign(name, value, { ...opt('waitMs', o.waitMs), ...opt('owner', o.owner), ...opt('signal', o.signal), ...opt('maxHoldMs', o.maxHoldMs) }, own ? { afterResign: () => session.close().then(() => undefined, (err: unknown) => this.warn(`could not close the session of election ${name} after resigning (it will expire after its ttl)`, err)) } : {});
    } catch (err) {
      if (own) await session.close().catch((e: unknown) => this.warn('could not close the session of a failed campaign (it will expire after its ttl)', e));
      throw err;
    }
  }

  /** GET /v1/elections/{name}: the leader and its value, or null while none leads (linearizable unless stale). */
  async getLeader(name: string, o: ReadOptions = {}): Promise<ElectionInfo> {
    const q = o.consistency === 'stale' ? '?consistency=stale' : '';
    const a = await this.http.call({ method: 'GET', path: electionPath(name) + q, retry: 'read', anyNode: q !== '', ...opt('signal', o.signal) });
    return decodeElection(a.body, `get election ${name}`);
  }

  /** POST /v1/elections/{name}/campaign, one request (campaign() is the safe pattern). */
  async requestCampaign(name: string, value: string, o: CampaignRequestOptions = {}): Promise<CampaignGrant & { sentAt: number }> {
    const waitMs = o.waitMs ?? 0;
    const base: Record<string, unknown> = { value };
    if (o.sessionId !== undefined) base.session_id = o.sessionId;
    if (o.ttlMs !== undefined) base.ttl_ms = o.ttlMs;
    if (o.owner !== undefined) base.owner = o.owner;
    if (o.maxHoldMs !== undefined) base.max_hold_ms = o.maxHoldMs;
    // A retry (same Idempotency-Key) asks only for the wait that is left.
    const body = (elapsed: number): Record<string, unknown> => ({ ...base, wait_ms: Math.max(0, Math.round(waitMs - elapsed)) });
    const a = await this.mutate({ method: 'POST', path: electionPath(name, 'campaign'), body, waitMs, signal: o.signal }, o.idempotencyKey);
    return { ...decodeCampaignGrant(a.body, `campaign ${name}`), sentAt: a.sentAt };
  }

  /** POST /v1/elections/{name}/proclaim: the leader's new value (NotHolderError for anyone else). */
  async proclaim(name: string, sessionId: string, value: string, o: { signal?: AbortSignal; idempotencyKey?: string } = {}): Promise<{ value: string }> {
    const a = await this.mutate({ method: 'POST', path: electionPath(name, 'proclaim'), body: { session_id: sessionId, value }, signal: o.signal }, o.idempotencyKey);
    const v = (a.body as { value?: unknown } | undefined)?.value;
    return { value: typeof v === 'string' ? v : value };
  }

  /** POST /v1/elections/{name}/resign: step down (or withdraw a waiting candidacy); NotHolderError otherwise. */
  async resign(name: string, sessionId: string, o: { signal?: AbortSignal; idempotencyKey?: string; budgetMs?: number } = {}): Promise<void> {
    const deadline = o.budgetMs !== undefined ? this.clock() + o.budgetMs : undefined;
    await this.mutate({ method: 'POST', path: electionPath(name, 'resign'), body: { session_id: sessionId }, signal: o.signal, ...opt('deadline', deadline) }, o.idempotencyKey);
  }

  /** GET /v1/cluster as seen by whichever node answers (or by `endpoint`). */
  async cluster(o: { endpoint?: string; signal?: AbortSignal; timeoutMs?: number } = {}): Promise<ClusterInfo & { endpoint: string }> {
    const deadline = o.timeoutMs === undefined ? undefined : this.clock() + o.timeoutMs;
    const a = await this.http.call({ method: 'GET', path: '/v1/cluster', retry: 'read', anyNode: true, ...opt('signal', o.signal), ...opt('deadline', deadline), ...opt('endpoint', o.endpoint === undefined ? undefined : normalizeEndpoint(o.endpoint)) });
    return { ...decodeCluster(a.body, 'cluster'), endpoint: a.endpoint };
  }

  /**
   * Acquire `name`, run `fn`, release in `finally`. `fn` gets the fencing token (pass it to
   * every resource you write) and a signal that aborts when the lock can no longer be
   * proven held. `fn` runs at most once: acquire retries are idempotent, `fn` never is
   * retried. If the lock was lost before `fn` settled, withLock rejects with LockLostError
   * (`.result` holds fn's value, `.cause` its error) — the work was not protected.
   */
  async withLock<T>(name: string, fn: (ctx: WithLockContext) => Promise<T> | T, o: WithLockOptions = {}): Promise<T> {
    return this.withGrant(o, (session) => session.lock(name, { ...opt('waitMs', o.waitMs), ...opt('owner', o.owner), ...opt('signal', o.signal), ...opt('mode', o.mode), ...opt('maxHoldMs', o.maxHoldMs) }),
      (l, session) => fn({ fencingToken: l.fencingToken, signal: l.signal, sessionId: session.id, lock: l }));
  }

  /**
   * withLock for several locks at once (docs/contract.md §5): takes every name together
   * (session.lockAll: never deadlocks with another withLocks over the same names, in any
   * order), runs `fn` once, releases them all in `finally`. `fn` gets each name's fencing
   * token and a signal that aborts when ANY of them can no longer be proven held. If one was
   * lost before `fn` settled, withLocks rejects with LockLostError — the work was not
   * protected.
   */
  async withLocks<T>(names: readonly string[], fn: (ctx: WithLocksContext) => Promise<T> | T, o: WithLockOptions = {}): Promise<T> {
    const own = o.session === undefined;
    const session = o.session ?? (await this.session({ ...opt('ttlMs', o.ttlMs), ...opt('owner', o.owner), ...opt('safetyMarginMs', o.safetyMarginMs), ...opt('signal', o.signal) }));
    let set: LockSet | undefined;
    try {
      set = await session.lockAll(names, { ...opt('waitMs', o.waitMs), ...opt('owner', o.owner), ...opt('signal', o.signal), ...opt('mode', o.mode), ...opt('maxHoldMs', o.maxHoldMs) });
      const ls = set;
      let value: T;
      try {
        value = await fn({ fencingTokens: ls.fencingTokens, signal: ls.signal, sessionId: session.id, locks: ls });
      } catch (err) {
        if (ls.signal.aborted && ls.signal.reason instanceof LockLostError && !(err instanceof LockLostError)) throw lostWith(ls.signal.reason, { cause: err });
        throw err;
      }
      if (ls.signal.aborted && ls.signal.reason instanceof LockLostError) throw lostWith(ls.signal.reason, { result: value });
      return value;
    } finally {
      try {
        if (own) await session.close();
        else if (set) await set.release();
      } catch (err) {
        this.warn(`could not release ${set ? `locks ${names.join(', ')}` : 'the session'} (they expire after the session's ttl)`, err);
      }
    }
  }

  /** withLock and withSemaphore: session (own or given), acquire, run once, release in finally. */
  private async withGrant<L extends Lock, T>(
    o: { session?: Session; ttlMs?: number; owner?: string; safetyMarginMs?: number; signal?: AbortSignal },
    acquire: (session: Session) => Promise<L>, run: (l: L, session: Session) => Promise<T> | T,
  ): Promise<T> {
    const own = o.session === undefined;
    const session = o.session ?? (await this.session({ ...opt('ttlMs', o.ttlMs), ...opt('owner', o.owner), ...opt('safetyMarginMs', o.safetyMarginMs), ...opt('signal', o.signal) }));
    let lock: L | undefined;
    try {
      lock = await acquire(session);
      const l = lock;
      let value: T;
      try {
        value = await run(l, session);
      } catch (err) {
        if (l.signal.aborted && l.signal.reason instanceof LockLostError && !(err instanceof LockLostError)) throw lostWith(l.signal.reason, { cause: err });
        throw err;
      }
      if (l.signal.aborted && l.signal.reason instanceof LockLostError) throw lostWith(l.signal.reason, { result: value });
      return value;
    } finally {
      await this.cleanUp(own, session, lock);
    }
  }

  private async cleanUp(own: boolean, session: Session, lock: Lock | undefined): Promise<void> {
    try {
      // Closing our own session releases the lock in the same committed command.
      if (own) await session.close();
      else if (lock) await lock.release();
    } catch (err) {
      this.warn(`could not release ${lock ? `lock ${lock.name}` : 'the session'} (it will expire after its ttl)`, err);
    }
  }

  // ---- internals ----------------------------------------------------------------------

  private warn(message: string, err?: unknown): void {
    this.onWarning?.(message, err);
  }

  /** A mutation: one Idempotency-Key for all its retries. */
  private mutate(spec: Omit<CallSpec, 'retry' | 'idempotencyKey' | 'signal'> & { signal: AbortSignal | undefined }, key: string | undefined): Promise<Answer> {
    const { signal, ...rest } = spec;
    return this.http.call({ ...rest, retry: 'keyed', idempotencyKey: key ?? randomUUID(), ...opt('signal', signal) });
  }

  private sessionHost() {
    return {
      now: this.clock,
      random: this.rand,
      keepaliveAt: (sessionId: string, deadline: number, signal: AbortSignal) => this.keepalive(sessionId, { deadline, signal }),
      acquireFor: (name: string, p: { sessionId: string; waitMs: number; owner?: string; signal: AbortSignal; mode?: 'exclusive' | 'shared'; maxHoldMs?: number }) => this.acquire(name, p),
      acquireAllFor: (names: readonly string[], p: { sessionId: string; waitMs: number; owner?: string; signal: AbortSignal; mode?: 'exclusive' | 'shared'; maxHoldMs?: number }) => this.acquireAll(names, p),
      releaseAll: (names: readonly string[], sessionId: string, o?: { signal?: AbortSignal; budgetMs?: number }) => this.releaseAll(names, sessionId, o ?? {}),
      release: (name: string, sessionId: string, fencingToken?: number, o?: { signal?: AbortSignal; budgetMs?: number }) => this.release(name, sessionId, fencingToken, o ?? {}),
      acquireSemaphoreFor: (name: string, p: { sessionId: string; limit: number; permits: number; waitMs: number; owner?: string; signal: AbortSignal; maxHoldMs?: number }) => this.acquireSemaphore(name, p),
      sessionLocks: async (sessionId: string, signal: AbortSignal) => (await this.getSession(sessionId, { signal })).locks,
      releaseSemaphore: (name: string, sessionId: string, o?: { signal?: AbortSignal; budgetMs?: number }) => this.releaseSemaphore(name, sessionId, o ?? {}),
      checkToken: (name: string, token: number) => this.checkToken(name, token),
      campaignFor: (name: string, p: { sessionId: string; value: string; waitMs: number; owner?: string; signal: AbortSignal; maxHoldMs?: number }) => this.requestCampaign(name, p.value, p),
      proclaim: (name: string, sessionId: string, value: string) => this.proclaim(name, sessionId, value),
      resign: (name: string, sessionId: string, o?: { signal?: AbortSignal; budgetMs?: number }) => this.resign(name, sessionId, o ?? {}),
      closeSession: (sessionId: string, o?: { budgetMs?: number }) => this.closeSession(sessionId, o ?? {}),
      warn: (m: string, e?: unknown) => this.warn(m, e),
    };
  }
}

function lostWith(reason: LockLostError, extra: { result?: unknown; cause?: unknown }): LockLostError {
  const e = new LockLostError(reason.lockName, reason.fencingToken, `${reason.message} — the work under the lock was not protected to the end`, extra.cause !== undefined ? { cause: extra.cause } : { cause: reason });
  if ('result' in extra) e.result = extra.result;
  return e;
}

function positive(v: number, what: string): number {
  if (!Number.isFinite(v) || v <= 0) throw new InvalidRequestError('invalid_request', `${what} must be a positive number of ms, got ${v}`);
  return v;
}

/** the query string of a list request ("" when it needs none) */
function listQuery(o: ListOptions): string {
  const q = new URLSearchParams();
  if (o.prefix) q.set('prefix', o.prefix);
  if (o.limit !== undefined) q.set('limit', String(o.limit));
  if (o.consistency === 'stale') q.set('consistency', 'stale');
  const qs = q.toString();
  return qs ? `?${qs}` : '';
}

/** `{ [k]: v }` when v is defined, else `{}` (keeps optional fields truly absent). */
function opt<K extends string, V>(k: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [k]: v }) as { [P in K]?: V };
}
