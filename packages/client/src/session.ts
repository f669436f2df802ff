// A session kept alive by keepalives, and the client's PROOF of it.
//
// The contract (docs/contract.md §3 "Locks", "TTL semantics", never early) guarantees: a
// session does not expire sooner than ttl_ms after its client SENT its last acknowledged
// keepalive/renew/acquire. So the client knows the session is alive until
//     provenUntil = sentAt(last acknowledged renewal) + ttl − safetyMargin
// and declares it `lost` at that instant at the latest — before the server could have
// expired it — rather than when the next keepalive happens to fail. The margin absorbs
// clock-rate differences between client and leader and the lateness of timers; a paused
// client process can still overrun it, which is what fencing tokens are for.
//
// Keepalives go out every ~ttl/3 with ±10% jitter (so many clients do not synchronise), and
// each one may retry across endpoints until provenUntil; a failed one is retried quickly.
// Loss is final: once lost, the session never becomes "held" again, even if a late
// acknowledgement arrives — consumers already stopped on the abort.
import { EventEmitter } from 'node:events';
import { LockLostError, RaftlockError, SessionLostError, SessionNotFoundError, InvalidRequestError, PermissionDeniedError, NotHolderError } from './errors.js';
import { definitelyNotApplied, waitRanOut } from './outcome.js';
import { Lock, type LockOwner } from './lock.js';
import { SemaphoreGrant } from './semaphore.js';
import { Leadership, type LeadershipHost } from './leadership.js';
import { LockSet, type LockSetOwner } from './lock-set.js';
import type { CampaignGrant, Grant, KeepaliveGrant, LockSetGrantInfo, SemaphoreGrantInfo } from './wire.js';

/** The slice of RaftlockClient a Session uses. */
export interface SessionHost {
  now(): number;
  random(): number;
  /** `grants`: the session's grants as of the keepalive, from a server that lists them */
  keepaliveAt(sessionId: string, deadline: number, signal: AbortSignal): Promise<{ sentAt: number; ttlMs: number; grants?: KeepaliveGrant[] }>;
  acquireFor(name: string, p: { sessionId: string; waitMs: number; owner?: string; signal: AbortSignal; mode?: 'exclusive' | 'shared'; maxHoldMs?: number }): Promise<Grant & { sentAt: number }>;
  /** lock sets (docs/contract.md §5 "Lock sets") */
  acquireAllFor(names: readonly string[], p: { sessionId: string; waitMs: number; owner?: string; signal: AbortSignal; mode?: 'exclusive' | 'shared'; maxHoldMs?: number }): Promise<LockSetGrantInfo & { sentAt: number }>;
  releaseAll(names: readonly string[], sessionId: string, o?: { signal?: AbortSignal; budgetMs?: number }): Promise<{ released: string[] }>;
  release(name: string, sessionId: string, fencingToken?: number, o?: { signal?: AbortSignal; budgetMs?: number }): Promise<void>;
  acquireSemaphoreFor(name: string, p: { sessionId: string; limit: number; permits: number; waitMs: number; owner?: string; signal: AbortSignal; maxHoldMs?: number }): Promise<SemaphoreGrantInfo & { sentAt: number }>;
  /** GET /v1/sessions/{id}: the locks the session holds (the revocation check after
   *  keepalives, for a server whose keepalive answer does not list the grants) */
  sessionLocks(sessionId: string, signal: AbortSignal): Promise<string[]>;
  /** gives back every permit this session holds of `name` */
  releaseSemaphore(name: string, sessionId: string, o?: { signal?: AbortSignal; budgetMs?: number }): Promise<void>;
  checkToken(name: string, fencingToken: number): Promise<boolean>;
  /** elections (docs/contract.md §4 "Leader election") */
  campaignFor(name: string, p: { sessionId: string; value: string; waitMs: number; owner?: string; signal: AbortSignal; maxHoldMs?: number }): Promise<CampaignGrant & { sentAt: number }>;
  proclaim(name: string, sessionId: string, value: string): Promise<{ value: string }>;
  resign(name: string, sessionId: string, o?: { signal?: AbortSignal; budgetMs?: number }): Promise<void>;
  closeSession(sessionId: string, opts?: { budgetMs?: number }): Promise<{ released: string[] }>;
  warn(message: string, err?: unknown): void;
}

export interface SessionTiming {
  ttlMs: number;
  /** subtracted from every proven deadline (default: ttl/10, between 20 ms and 2 s) */
  safetyMarginMs?: number;
  /** time between keepalives (default: ttl/3, jittered ±10%) */
  keepaliveIntervalMs?: number;
}

export interface SessionLockOptions {
  /** how long to wait in the lock's FIFO queue (default 0: fail at once with LockHeldError) */
  waitMs?: number;
  owner?: string;
  signal?: AbortSignal;
  /** 'shared': a shared (read) lock; shared holders coexist, an exclusive one waits for all */
  mode?: 'exclusive' | 'shared';
  /** the server frees the grant this long after it was made, even while the session lives
   *  (100 ms – 2147483647 ms); the lock's signal aborts safetyMarginMs before (docs/client.md) */
  maxHoldMs?: number;
}

export interface SessionCampaignOptions {
  /** how long to wait in the election's FIFO queue (default 0: fail at once with LockHeldError, whose `leader` names the leader) */
  waitMs?: number;
  owner?: string;
  signal?: AbortSignal;
  /** max_hold_ms: the server ends this leadership that long after it began, however long
   *  the session lives (100..2147483647; docs/contract.md §4 "Revocation and maximum
   *  hold"); the Leadership's signal aborts a safety margin before */
  maxHoldMs?: number;
}

export interface SessionSemaphoreOptions {
  /** the semaphore's limit (1–10000); must match the limit of a busy semaphore (else LimitMismatchError) */
  limit: number;
  /** permits to take (default 1, at most limit) */
  permits?: number;
  /** how long to wait in the FIFO queue (default 0: fail at once with SemaphoreFullError) */
  waitMs?: number;
  owner?: string;
  signal?: AbortSignal;
  /** as SessionLockOptions.maxHoldMs */
  maxHoldMs?: number;
}

/** Locks and semaphores are separate name spaces; cleanups are kept per resource. */
type Kind = 'lock' | 'semaphore';
interface Unresolved {
  kind: Kind;
  name: string;
  /** the grant's token (undefined: whatever this session holds of it, and its wait) */
  token: number | undefined;
  /** semaphores: client clock until which a wait of the failed acquire may still be granted */
  waitUntil?: number;
  /** the release of a grant a late copy of a given-up acquire made (sweepLate) */
  late?: true;
}

/**
 * An acquire of this session out on the wire. A release of one of its names in this
 * session that starts meanwhile (another grant object's release, a given-up acquire's
 * cleanup) may be applied after it and end the grant its answer describes: a second acquire
 * of a name the session holds returns the same grant. Such an answer is not handed out; the
 * acquire asks again once the release is done, and its new answer is the truth (a grant the
 * release left standing is answered again: the session still holds it). docs/client.md
 * "Acquires and releases of one name at once".
 */
interface Ask {
  keys: readonly string[];
  overtaken: boolean;
}

type SessionEvents = {
  lost: [SessionLostError];
  keepalive: [{ sentAt: number; provenUntil: number }];
};

/** The contract's longest single wait (wait_ms ≤ 300000); longer waits re-queue. */
const MAX_WAIT_PER_REQUEST_MS = 300_000;
/** How long a failed acquire's cleanup release may delay the acquire's error; after that
 *  it is retried after every acknowledged keepalive (docs/client.md). */
const CLEANUP_BUDGET_MS = 5000;
/** Allowance for a semaphore acquire's queued wait to outlive its request on the client's
 *  clock (its arrival lags its send; the server ends it by its own timer). */
const SEM_WAIT_SLACK_MS = 2000;
/** How long a name whose acquire gave up is watched for a grant a late copy of that
 *  acquire makes (sweepLate): the server keeps an Idempotency-Key this long, and a copy
 *  (a relay that sat behind a paused node) is most likely to arrive within seconds. */
const WATCH_MS = 600_000;
/** at most this many watched names per session; the oldest goes first */
const MAX_WATCHED = 1024;

function key(kind: Kind, name: string): string {
  return `${kind}\0${name}`;
}

/** the name space of a keepalive answer's grant: elections are locks on the server */
function kindOf(g: KeepaliveGrant): Kind {
  return g.kind === 'semaphore' ? 'semaphore' : 'lock';
}

/** the acquire options every kind of acquire checks alike */
function checkWait(opts: { waitMs?: number; maxHoldMs?: number }): { waitMs: number; maxHoldMs: number | undefined } {
  const waitMs = opts.waitMs ?? 0;
  if (!Number.isSafeInteger(waitMs) || waitMs < 0) throw new InvalidRequestError('invalid_request', `waitMs must be a whole number of ms >= 0, got ${waitMs}`);
  const maxHoldMs = opts.maxHoldMs;
  if (maxHoldMs !== undefined && (!Number.isSafeInteger(maxHoldMs) || maxHoldMs < 100 || maxHoldMs > 2_147_483_647)) throw new InvalidRequestError('invalid_request', `maxHoldMs must be a whole number of ms in 100..2147483647, got ${maxHoldMs}`);
  return { waitMs, maxHoldMs };
}

/** a lock set's names: 1–64 distinct non-empty strings (the server checks their syntax) */
function checkNames(names: readonly string[]): string[] {
  if (!Array.isArray(names) || names.length < 1 || names.length > 64) throw new InvalidRequestError('invalid_request', `a lock set names 1-64 locks, got ${Array.isArray(names) ? names.length : typeof names}`);
  const seen = new Set<string>();
  for (const n of names) {
    if (typeof n !== 'string' || n.length === 0) throw new InvalidRequestError('invalid_request', 'lock names must be non-empty strings');
    if (seen.has(n)) throw new InvalidRequestError('invalid_request', `lock ${n} is named twice`);
    seen.add(n);
  }
  return [...names];
}

export function defaultSafetyMarginMs(ttlMs: number): number {
  return Math.min(2000, Math.max(20, Math.round(ttlMs / 10)));
}

export class Session extends EventEmitter<SessionEvents> {
  readonly id: string;
  readonly ttlMs: number;
  readonly safetyMarginMs: number;
  readonly keepaliveIntervalMs: number;
  /** Settles with the reason when the session is lost (never when closed cleanly). */
  readonly lost: Promise<SessionLostError>;
  private resolveLost!: (e: SessionLostError) => void;
  private state: 'open' | 'lost' | 'closed' = 'open';
  private proven: number;
  private lastAckSent: number;
  private readonly controller = new AbortController();
  private readonly locks = new Set<Lock>();
  /** client clock when each lock's grant was answered (the revocation check, checkRevoked) */
  private readonly seenAt = new WeakMap<Lock, number>();
  private checking = false;
  /** does the server's keepalive answer list the session's grants? ('unknown' until the
   *  first keepalive): if so, revocation is judged from it and nothing else is read */
  private grantsListed: 'unknown' | 'yes' | 'no' = 'unknown';
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private lostTimer: NodeJS.Timeout | undefined;
  private inflight = false;
  private readonly owner: LockOwner;
  private readonly semOwner: LockOwner;
  private readonly electionOwner: LockOwner;
  private readonly setOwner: LockSetOwner;
  /** cleanup releases in flight, by kind and name (docs/client.md "An acquire that fails…") */
  private readonly cleanups = new Map<string, Promise<void>>();
  /** resources whose cleanup release failed (by kind and name); released again after
   *  every acknowledged keepalive */
  private readonly unresolved = new Map<string, Unresolved>();
  /** names whose acquire gave up, by kind and name: client clock until which a grant of
   *  the name that no grant object holds is released (sweepLate). Insertion order is
   *  deadline order (watch re-inserts). */
  private readonly watched = new Map<string, number>();
  /** acquires in flight, by kind and name (a sweep leaves their names alone) */
  private readonly acquiring = new Map<string, number>();
  /** every release of this session in flight (a grant object's, a cleanup, the sweep's), by
   *  kind and name: an acquire of the name waits for these before it is sent (see Ask), and
   *  the sweep leaves the name alone (a grant a release is giving back is no late grant) */
  private readonly releasesOut = new Map<string, Set<Promise<unknown>>>();
  /** acquires of this session out on the wire, by kind and name: a release of the name
   *  that starts meanwhile marks them overtaken (askUntilGranted) */
  private readonly asking = new Map<string, Set<Ask>>();

  /** @internal use RaftlockClient.session() */
  constructor(private readonly host: SessionHost, id: string, timing: SessionTiming, openedSentAt: number) {
    super();
    this.id = id;
    this.ttlMs = timing.ttlMs;
    this.safetyMarginMs = timing.safetyMarginMs ?? defaultSafetyMarginMs(timing.ttlMs);
    this.keepaliveIntervalMs = timing.keepaliveIntervalMs ?? Math.max(1, Math.floor(timing.ttlMs / 3));
    if (!(this.safetyMarginMs >= 0 && this.safetyMarginMs < this.ttlMs / 2)) {
      throw new InvalidRequestError('invalid_request', `safetyMarginMs must be in [0, ttl/2), got ${this.safetyMarginMs} for ttl ${this.ttlMs}`);
    }
    if (!(this.keepaliveIntervalMs > 0 && this.keepaliveIntervalMs < this.ttlMs - this.safetyMarginMs)) {
      throw new InvalidRequestError('invalid_request', `keepaliveIntervalMs must be in (0, ttl − margin), got ${this.keepaliveIntervalMs}`);
    }
    this.lost = new Promise((resolve) => (this.resolveLost = resolve));
    this.lastAckSent = openedSentAt;
    this.proven = openedSentAt + this.ttlMs - this.safetyMarginMs;
    // `byName`: the release ends every grant of the name in this session (a semaphore's, an
    // election's resign), not only the one of the grant object's token
    const ownerOf = (kind: Kind, byName: boolean, release: (l: Lock) => Promise<void>, check: (l: Lock) => Promise<boolean>): LockOwner => ({
      id,
      provenUntil: () => this.provenUntil,
      now: () => host.now(),
      isOpen: () => this.state === 'open',
      releaseLock: (l) => {
        // another grant object of the session may carry the same grant (a second acquire
        // of a name the session holds returns it): from this release on, it is not held
        this.dropGrants(kind, l.name, l, byName ? undefined : l.fencingToken);
        return this.tracked([key(kind, l.name)], release(l)).catch((err: unknown) => {
          // Unless the server answered (not_holder: it is not ours any more), the grant may
          // still be held while the keepalives go on: retry the release with them.
          const answered = err instanceof RaftlockError && err.status !== undefined && err.status >= 400 && err.status < 500;
          if (!answered && this.state === 'open') this.unresolved.set(key(kind, l.name), { kind, name: l.name, token: l.fencingToken });
          throw err;
        });
      },
      checkLock: check,
      forget: (l) => this.locks.delete(l),
    });
    this.owner = ownerOf('lock', false, (l) => host.release(l.name, id, l.fencingToken), (l) => host.checkToken(l.name, l.fencingToken));
    // A lock set's release: one release-all; unless the server answered, each lock is
    // retried with the keepalives by its token, as a lock's release is.
    this.setOwner = {
      releaseAll: (locks) => {
        // release-all ends the session's grant of each name, whichever object carries it
        for (const l of locks) this.dropGrants('lock', l.name);
        return this.tracked(locks.map((l) => key('lock', l.name)), host.releaseAll(locks.map((l) => l.name), id)).then(() => undefined, (err: unknown) => {
          const answered = err instanceof RaftlockError && err.status !== undefined && err.status >= 400 && err.status < 500;
          if (!answered && this.state === 'open') for (const l of locks) this.unresolved.set(key('lock', l.name), { kind: 'lock', name: l.name, token: l.fencingToken });
          throw err;
        });
      },
      releaseOne: (l) => this.owner.releaseLock(l),
    };
    // A semaphore release gives back all of this session's permits of the name (the
    // contract has no per-token release); the contract has no token check for semaphores.
    // A second acquire of a semaphore the session holds returns the same grant (same
    // token, src/lock-fsm/semaphores.ts), so one release ends every grant object of it.
    this.semOwner = ownerOf('semaphore', true, (l) => host.releaseSemaphore(l.name, id), (l) =>
      Promise.reject(new InvalidRequestError('invalid_request', `semaphore ${l.name}: the server offers no fencing-token check for semaphores; check the token at the resource`)),
    );
    // An election is the lock of its name on the server: its cleanup is the lock's
    // (a release withdraws a wait and frees a grant, docs/api.md "Release"); stepping
    // down is a resign, so the next candidate leads and watchers see `resigned`.
    this.electionOwner = ownerOf('lock', true, (l) => host.resign(l.name, id), (l) => host.checkToken(l.name, l.fencingToken));
    this.armLostTimer();
    this.scheduleKeepalive(this.jittered());
  }

  /** Aborts (reason: SessionLostError) when the session is lost or closed. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Client clock (ms) until which the session is proven alive; -Infinity once lost or closed. */
  get provenUntil(): number {
    return this.state === 'open' ? this.proven : -Infinity;
  }

  /** Client clock (ms) when the last acknowledged renewal was sent. */
  get lastAckSentAt(): number {
    return this.lastAckSent;
  }

  get isLost(): boolean {
    return this.state === 'lost';
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  /**
   * Takes `name` in this session. Waits up to `waitMs` in the FIFO queue (longer waits
   * re-queue every 300 s). Throws LockHeldError when the wait runs out, SessionLostError
   * when the session is lost meanwhile. An acquire that ends without a definite "not
   * applied" (an abort, OutcomeUnknownError, …) releases `name` in this session before it
   * throws, so that no grant the caller never saw is left behind (docs/client.md).
   */
  async lock(name: string, opts: SessionLockOptions = {}): Promise<Lock> {
    return this.acquireIn('lock', name, opts, 'lock_held',
      (waitMs, signal) => this.host.acquireFor(name, { sessionId: this.id, waitMs, signal, ...(opts.owner !== undefined ? { owner: opts.owner } : {}), ...(opts.mode === 'shared' ? { mode: 'shared' as const } : {}), ...(opts.maxHoldMs !== undefined ? { maxHoldMs: opts.maxHoldMs } : {}) }),
      (g) => new Lock(this.owner, g));
  }

  /**
   * Takes every lock of `names` (1–64 distinct names) in this session at once: the server
   * grants them together in one step, or makes the set wait as one request with one place
   * in the FIFO queue of each name, so two sets over the same names never wait for each
   * other (docs/contract.md §5). The rules of lock(): waits up to `waitMs` (LockHeldError
   * with `blocked` when it runs out), DeadlockError when waiting would close a cycle, and
   * an acquire that ends without a definite "not applied" gives every name back (one
   * release-all, which also withdraws the wait) before it throws. The LockSet's `signal`
   * aborts when ANY of its locks can no longer be proven held.
   */
  async lockAll(names: readonly string[], opts: SessionLockOptions = {}): Promise<LockSet> {
    const list = checkNames(names);
    this.assertOpen();
    const { waitMs, maxHoldMs } = checkWait(opts);
    opts.signal?.throwIfAborted();
    return this.during(this.acquiring, list.map((n) => key('lock', n)), () => this.acquireSet(list, opts, waitMs, maxHoldMs));
  }

  private async acquireSet(list: string[], opts: SessionLockOptions, waitMs: number, maxHoldMs: number | undefined): Promise<LockSet> {
    const signal = opts.signal ? AbortSignal.any([this.signal, opts.signal]) : this.signal;
    const locks = await this.askUntilGranted(list.map((n) => key('lock', n)), waitMs, 'lock_held',
      (chunk) => this.host.acquireAllFor(list, { sessionId: this.id, waitMs: chunk, signal, ...(opts.owner !== undefined ? { owner: opts.owner } : {}), ...(opts.mode === 'shared' ? { mode: 'shared' as const } : {}), ...(maxHoldMs !== undefined ? { maxHoldMs } : {}) }),
      // The server may have granted the set, or still queue it: give every name back
      // (release-all also ends the wait).
      () => this.cleanUpSet(list),
      (g) => {
        const locks = g.grants.map((x) => new Lock(this.owner, { name: x.name, fencingToken: x.fencingToken, ttlMs: g.ttlMs, mode: g.mode }));
        const seen = this.host.now();
        for (const lock of locks) {
          // as in acquireIn: a name the session held keeps that grant (and its first max hold)
          for (const l of this.locks) if (l.fencingToken === lock.fencingToken) lock.limitHold(l.holdUntil);
          if (maxHoldMs !== undefined) lock.limitHold(g.sentAt + maxHoldMs - this.safetyMarginMs);
          // the grant's own remaining max hold, as the server answered it
          const left = g.grants.find((x) => x.name === lock.name)?.maxHoldLeftMs;
          if (left !== undefined) lock.limitHold(g.sentAt + left - this.safetyMarginMs);
          this.locks.add(lock);
          this.seenAt.set(lock, seen);
        }
        if (this.state !== 'open') {
          for (const l of locks) l.markLost(`session ${this.id} was lost while acquiring ${list.join(', ')}`);
          throw this.signal.reason instanceof Error ? this.signal.reason : new SessionLostError(this.id, `session ${this.id} was lost`);
        }
        return locks;
      });
    const set = new LockSet(locks, this.setOwner);
    if (!set.held) {
      // granted after a wait whose only proof is older than the lease (see acquireIn)
      for (const l of locks) l.markLost(`lock set ${list.join(', ')} was granted but the session could not be proven alive`);
      await set.release().catch((err: unknown) => {
        if (!(err instanceof NotHolderError)) this.host.warn(`could not release the lock set ${list.join(', ')}, granted while the session could not be proven alive; retrying after the next keepalive`, err);
      });
    }
    return set;
  }

  /** release-all of a lock set's names after an acquire-all whose outcome the caller never
   *  saw; what fails is left to the keepalives' per-name cleanups. Never throws. */
  private async cleanUpSet(names: readonly string[]): Promise<void> {
    for (const n of names) {
      this.dropGrants('lock', n);
      this.watch('lock', n);
    }
    try {
      await this.tracked(names.map((n) => key('lock', n)), this.host.releaseAll(names, this.id, { signal: this.signal, budgetMs: CLEANUP_BUDGET_MS }));
    } catch (err) {
      if (this.state !== 'open') return;
      if (err instanceof SessionNotFoundError) return this.markLost(`the server no longer knows session ${this.id}`, err);
      for (const name of names) this.unresolved.set(key('lock', name), { kind: 'lock', name, token: undefined });
      this.host.warn(`could not release ${names.join(', ')} in session ${this.id} after an acquire-all that did not succeed; retrying after the next keepalive (closing the session also frees them)`, err);
    }
  }

  /**
   * Takes `permits` (default 1) of semaphore `name` of `limit` in this session, with the
   * same rules as lock(): waits up to `waitMs` in the FIFO queue, then throws
   * SemaphoreFullError; LimitMismatchError when the semaphore is busy under another
   * limit; an acquire that ends without a definite "not applied" releases the semaphore
   * in this session before it throws (docs/client.md). The grant's `signal` aborts when
   * the session can no longer be proven alive.
   */
  async semaphore(name: string, opts: SessionSemaphoreOptions): Promise<SemaphoreGrant> {
    const limit = opts?.limit;
    const permits = opts?.permits ?? 1;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 10_000) throw new InvalidRequestError('invalid_request', `limit must be a whole number in 1..10000, got ${String(limit)}`);
    if (!Number.isSafeInteger(permits) || permits < 1 || permits > limit) throw new InvalidRequestError('invalid_request', `permits must be a whole number in 1..limit (${limit}), got ${String(permits)}`);
    return this.acquireIn('semaphore', name, opts, 'semaphore_full',
      (waitMs, signal) => this.host.acquireSemaphoreFor(name, { sessionId: this.id, limit, permits, waitMs, signal, ...(opts.owner !== undefined ? { owner: opts.owner } : {}), ...(opts.maxHoldMs !== undefined ? { maxHoldMs: opts.maxHoldMs } : {}) }),
      (g) => new SemaphoreGrant(this.semOwner, g));
  }

  /**
   * Campaigns in election `name` with `value` in this session: leads at once, or waits up
   * to `waitMs` in the FIFO queue (LockHeldError when it runs out, with the `leader`).
   * The rules of lock(): a campaign that ends without a definite "not applied" withdraws
   * in this session before it throws. The Leadership's `signal` aborts when the session
   * can no longer be proven alive, on resign(), and when a check after a keepalive finds
   * that this session no longer leads (a revoke, docs/client.md "Elections").
   */
  async campaign(name: string, value: string, opts: SessionCampaignOptions = {}, leadershipHost: Partial<LeadershipHost> = {}): Promise<Leadership> {
    if (typeof value !== 'string') throw new InvalidRequestError('invalid_request', `value must be a string, got ${typeof value}`);
    if (Buffer.byteLength(value, 'utf8') > 4096) throw new InvalidRequestError('invalid_request', `value must be at most 4096 bytes (4 KiB) of UTF-8, got ${Buffer.byteLength(value, 'utf8')} bytes`);
    const lh: LeadershipHost = { proclaim: (n, sid, v) => this.host.proclaim(n, sid, v), ...leadershipHost };
    const l = await this.acquireIn('lock', name, opts, 'lock_held',
      (waitMs, signal) => this.host.campaignFor(name, { sessionId: this.id, value, waitMs, signal, ...(opts.owner !== undefined ? { owner: opts.owner } : {}), ...(opts.maxHoldMs !== undefined ? { maxHoldMs: opts.maxHoldMs } : {}) }),
      (g) => new Leadership(this.electionOwner, g, lh));
    this.watchLeadership(l);
    return l;
  }

  /** A revoke or max-hold end fails no keepalive. A server whose keepalive answer lists the
   *  grants tells it there (judgeGrants); with an older one, after every acknowledged
   *  keepalive, ask whether the leadership's token still holds the election (one
   *  linearizable read). */
  private watchLeadership(l: Leadership): void {
    if (l.signal.aborted) return;
    const onKeepalive = (): void => {
      if (this.grantsListed !== 'no') return;
      void l.check().then((current) => {
        if (!current) l.markLost(`election ${l.name}: token ${l.fencingToken} no longer leads (revoked, or the grant ended)`);
      }, (err: unknown) => this.host.warn(`could not check the leadership of election ${l.name}; checking again after the next keepalive`, err));
    };
    this.on('keepalive', onKeepalive);
    l.signal.addEventListener('abort', () => this.off('keepalive', onKeepalive), { once: true });
  }

  /**
   * The acquire loop of locks and semaphores: re-queues waits longer than the contract's
   * longest, renews the proof from a grant, and cleans up after every acquire that may
   * have taken effect unseen (docs/client.md "An acquire that fails…").
   */
  private async acquireIn<G extends { name: string; fencingToken: number; sentAt: number; maxHoldLeftMs?: number }, L extends Lock>(
    kind: Kind, name: string, opts: { waitMs?: number; signal?: AbortSignal; maxHoldMs?: number }, fullCode: string,
    call: (waitMs: number, signal: AbortSignal) => Promise<G>, make: (g: G) => L,
  ): Promise<L> {
    this.assertOpen();
    const waitMs = opts.waitMs ?? 0;
    if (!Number.isSafeInteger(waitMs) || waitMs < 0) throw new InvalidRequestError('invalid_request', `waitMs must be a whole number of ms >= 0, got ${waitMs}`);
    const maxHoldMs = opts.maxHoldMs;
    if (maxHoldMs !== undefined && (!Number.isSafeInteger(maxHoldMs) || maxHoldMs < 100 || maxHoldMs > 2_147_483_647)) throw new InvalidRequestError('invalid_request', `maxHoldMs must be a whole number of ms in 100..2147483647, got ${maxHoldMs}`);
    opts.signal?.throwIfAborted();
    return this.during(this.acquiring, [key(kind, name)], () => this.acquireOnce(kind, name, opts, fullCode, call, make, waitMs, maxHoldMs));
  }

  private async acquireOnce<G extends { name: string; fencingToken: number; sentAt: number; maxHoldLeftMs?: number }, L extends Lock>(
    kind: Kind, name: string, opts: { signal?: AbortSignal }, fullCode: string,
    call: (waitMs: number, signal: AbortSignal) => Promise<G>, make: (g: G) => L, waitMs: number, maxHoldMs: number | undefined,
  ): Promise<L> {
    const signal = opts.signal ? AbortSignal.any([this.signal, opts.signal]) : this.signal;
    const lock = await this.askUntilGranted([key(kind, name)], waitMs, fullCode, (chunk) => call(chunk, signal),
      (chunk) => {
        // The server may have granted it (or still queue this session and grant it later).
        // A server of an earlier version did not withdraw a queued semaphore wait on
        // release (this one does: docs/api.md "Release"), so until that wait has surely
        // ended a "not_holder" answer proves nothing.
        this.watch(kind, name);
        return this.cleanUp({ kind, name, token: undefined, ...(kind === 'semaphore' ? { waitUntil: this.host.now() + chunk + SEM_WAIT_SLACK_MS } : {}) });
      },
      (g) => {
        const lock = make(g);
        // The grant was made after this request was sent (or is the grant an earlier Lock of
        // this session carries: same token, and the server keeps its first max hold), and the
        // server frees it no sooner than max_hold_ms of real time after it was made.
        for (const l of this.locks) if (l.fencingToken === lock.fencingToken) lock.limitHold(l.holdUntil);
        if (maxHoldMs !== undefined) lock.limitHold(g.sentAt + maxHoldMs - this.safetyMarginMs);
        // The server's word on the grant's own max hold: a grant an earlier request of this
        // session made (one given up on, delivered late) keeps that request's, which this
        // client may never have seen (docs/contract.md §4 "Revocation and maximum hold").
        if (g.maxHoldLeftMs !== undefined) lock.limitHold(g.sentAt + g.maxHoldLeftMs - this.safetyMarginMs);
        this.locks.add(lock);
        this.seenAt.set(lock, this.host.now());
        if (this.state !== 'open') {
          lock.markLost(`session ${this.id} was lost while acquiring ${name}`);
          throw this.signal.reason instanceof Error ? this.signal.reason : new SessionLostError(this.id, `session ${this.id} was lost`);
        }
        return lock;
      });
    if (!lock.held) {
      // Granted after a long wait whose only proof is older than the lease: we cannot
      // prove holding it, so we do not claim to (keepalives normally prevent this), and
      // give it back rather than keep a grant nobody uses.
      lock.markLost(`${kind} ${name} was granted but the session could not be proven alive`);
      await lock.release().catch((err: unknown) => {
        if (!(err instanceof NotHolderError)) this.host.warn(`could not release ${kind} ${name} (token ${lock.fencingToken}), granted while the session could not be proven alive; retrying after the next keepalive`, err);
      });
    }
    return lock;
  }

  /**
   * The request loop of every acquire (a lock, a semaphore, a campaign, a lock set) of
   * `keys`. Each request first waits for the releases of those names in flight in the
   * session; a wait that ran out before `waitMs` is queued again (`fullCode`); any other
   * failure calls `cleanUp` (given the request's wait) when the server may have granted
   * it, or when an overtaken answer before it may have left a grant standing, unless the
   * session is lost or closed (its end frees its grants and waits), and is rethrown. A
   * grant renews the session's proof from its send; an answer a release overtook is asked
   * again (see Ask). `take` tracks a grant in the same synchronous step as that check, so
   * a release that starts later finds what it made, and its result is returned.
   */
  private async askUntilGranted<G extends { sentAt: number }, T>(
    keys: readonly string[], waitMs: number, fullCode: string, send: (chunk: number) => Promise<G>,
    cleanUp: (chunk: number) => Promise<void>, take: (g: G) => T,
  ): Promise<T> {
    // A release of these names in flight in the session (an earlier acquire's cleanup, a
    // grant object's release) must not end what this acquire gets.
    await this.releasesDone(keys);
    for (const k of keys) this.unresolved.delete(k);
    const until = this.host.now() + waitMs;
    // an overtaken answer may have left a grant standing: giving up before the next
    // definite answer cleans up
    let outstanding = false;
    for (;;) {
      // checked synchronously right before the send: nothing can start in between
      if (keys.some((k) => this.releasesOut.has(k))) {
        await this.releasesDone(keys);
        continue;
      }
      this.assertOpen();
      const chunk = Math.min(MAX_WAIT_PER_REQUEST_MS, Math.max(0, Math.round(until - this.host.now())));
      const ask = this.asked(keys);
      const sentAt = this.host.now();
      let g: G;
      try {
        g = await send(chunk);
      } catch (err) {
        this.answered(ask);
        if (err instanceof SessionNotFoundError) this.markLost(`the server no longer knows session ${this.id}`, err);
        const full = err instanceof RaftlockError && err.code === fullCode;
        // this request's wait ran out before ours: queue again. A refusal before it could
        // have run out is the server's answer (outcome.ts waitRanOut): asking again would
        // get it again at once, in a loop for the rest of the wait.
        if (full && this.host.now() < until - 1 && waitRanOut(this.host.now() - sentAt, chunk)) {
          outstanding = false;
          continue;
        }
        if ((!definitelyNotApplied(err) || (outstanding && !full)) && this.state === 'open') await cleanUp(chunk);
        throw err;
      }
      this.answered(ask);
      // A granted acquire renewed the session from its arrival (spec: "A successful acquire
      // … also renews its session"), which is no earlier than its send time.
      this.noteAck(g.sentAt);
      if (ask.overtaken) {
        outstanding = true;
        continue; // see Ask
      }
      return take(g);
    }
  }

  /** One keepalive now (besides the automatic ones); resolves when acknowledged. */
  async keepalive(): Promise<void> {
    this.assertOpen();
    const askedAt = this.host.now();
    const r = await this.host.keepaliveAt(this.id, this.proven, this.signal);
    this.grantsListed = r.grants !== undefined ? 'yes' : 'no';
    this.noteAck(r.sentAt);
    if (r.grants !== undefined) {
      this.judgeGrants(r.grants, askedAt);
      this.sweepLate(r.grants);
    }
  }

  /**
   * Ends the session on the server (its locks are released at once) and stops the
   * keepalives. Every lock's signal aborts first. Closing a lost session only tidies up.
   */
  async close(): Promise<{ released: string[] }> {
    if (this.state === 'closed') return { released: [] };
    const wasLost = this.state === 'lost';
    this.state = 'closed';
    this.stopTimers();
    const reason = new SessionLostError(this.id, `session ${this.id} was closed`);
    for (const l of this.locks) l.markLost(`lock ${l.name} (token ${l.fencingToken}) was released: its session was closed`, reason);
    this.locks.clear();
    this.controller.abort(reason);
    if (wasLost) return { released: [] };
    return this.host.closeSession(this.id);
  }

  // ---- internals --------------------------------------------------------------------

  private assertOpen(): void {
    if (this.state === 'open') return;
    throw this.signal.reason instanceof Error ? this.signal.reason : new SessionLostError(this.id, `session ${this.id} is ${this.state}`);
  }

  /** An acknowledged renewal sent at `sentAt` extends the proof (never shortens it). */
  private noteAck(sentAt: number): void {
    if (this.state !== 'open') return;
    const until = sentAt + this.ttlMs - this.safetyMarginMs;
    if (until <= this.proven) return;
    this.proven = until;
    this.lastAckSent = sentAt;
    this.armLostTimer();
    this.emit('keepalive', { sentAt, provenUntil: until });
  }

  private armLostTimer(): void {
    if (this.lostTimer) clearTimeout(this.lostTimer);
    const ms = Math.max(0, this.proven - this.host.now());
    this.lostTimer = setTimeout(() => this.onLostTimer(), ms);
  }

  private onLostTimer(): void {
    this.lostTimer = undefined;
    if (this.state !== 'open') return;
    if (this.host.now() < this.proven) return this.armLostTimer(); // extended meanwhile, or the timer fired early
    this.markLost(`no keepalive of session ${this.id} was acknowledged in time: the lease can no longer be proven (ttl ${this.ttlMs} ms, margin ${this.safetyMarginMs} ms)`);
  }

  private jittered(): number {
    return Math.max(1, Math.round(this.keepaliveIntervalMs * (0.9 + 0.2 * this.host.random())));
  }

  private scheduleKeepalive(ms: number): void {
    if (this.state !== 'open') return;
    if (this.keepaliveTimer) clearTimeout(this.keepaliveTimer);
    this.keepaliveTimer = setTimeout(() => void this.runKeepalive(), ms);
  }

  private async runKeepalive(): Promise<void> {
    this.keepaliveTimer = undefined;
    if (this.state !== 'open' || this.inflight) return;
    this.inflight = true;
    try {
      const askedAt = this.host.now();
      // The call may keep retrying until the proof runs out; after that it is moot.
      const r = await this.host.keepaliveAt(this.id, this.proven, this.signal);
      this.grantsListed = r.grants !== undefined ? 'yes' : 'no';
      this.noteAck(r.sentAt);
      this.scheduleKeepalive(this.jittered());
      for (const u of [...this.unresolved.values()]) void this.cleanUp(u);
      if (r.grants !== undefined) {
        this.judgeGrants(r.grants, askedAt);
        this.sweepLate(r.grants);
      } else void this.checkRevoked();
    } catch (err) {
      if (this.state !== 'open') return;
      if (err instanceof SessionNotFoundError) return this.markLost(`the server no longer knows session ${this.id} (expired or closed)`, err);
      if (err instanceof PermissionDeniedError || err instanceof InvalidRequestError) return this.markLost(`keepalive of session ${this.id} was refused: ${err.message}`, err);
      this.host.warn(`keepalive of session ${this.id} failed; retrying`, err);
      this.scheduleKeepalive(Math.min(this.jittered(), 200));
    } finally {
      this.inflight = false;
    }
  }

  /**
   * Releases `name` in this session after an acquire whose outcome the caller never saw
   * (token undefined: whatever this session holds of it, and its wait — docs/api.md
   * "Release"), or a grant it could not use (its token). 200, 409 not_holder and 404 all
   * mean nothing is left — except a semaphore's not_holder before its wait surely ended,
   * which is retried with the keepalives until then; any other failure keeps the name
   * unresolved for the keepalives to retry. Never throws.
   */
  private cleanUp(u: Unresolved): Promise<void> {
    const k = key(u.kind, u.name);
    const running = this.cleanups.get(k);
    if (running) return running;
    this.unresolved.delete(k);
    const p = (async () => {
      // Without a token the release ends whatever this session holds of the name, by token
      // that grant only: no grant object that carries what it ends may go on claiming it.
      if (u.token === undefined || u.kind === 'semaphore') this.dropGrants(u.kind, u.name);
      else this.dropGrants(u.kind, u.name, undefined, u.token);
      try {
        const o = { signal: this.signal, budgetMs: CLEANUP_BUDGET_MS };
        if (u.kind === 'lock') await this.host.release(u.name, this.id, u.token, o);
        else await this.host.releaseSemaphore(u.name, this.id, o);
        if (u.late) this.host.warn(`released ${u.kind} ${u.name}${u.token !== undefined ? ` (token ${u.token})` : ''} in session ${this.id}: a late copy of an acquire that had given up was granted it`, undefined);
      } catch (err) {
        if (this.state !== 'open') return;
        if (err instanceof NotHolderError) {
          // Nothing held now; a semaphore wait may still be queued and granted later.
          if (u.waitUntil !== undefined && this.host.now() < u.waitUntil) this.unresolved.set(k, u);
          return;
        }
        if (err instanceof SessionNotFoundError) return this.markLost(`the server no longer knows session ${this.id}`, err);
        this.unresolved.set(k, u);
        this.host.warn(`could not release ${u.kind} ${u.name} in session ${this.id} after an acquire that did not succeed; retrying after the next keepalive (closing the session also frees it)`, err);
      } finally {
        this.cleanups.delete(k);
      }
    })();
    this.cleanups.set(k, p);
    return this.tracked([k], p);
  }

  /** runs `fn` with `keys` counted in flight in `counts` (acquiring) */
  private async during<T>(counts: Map<string, number>, keys: readonly string[], fn: () => Promise<T>): Promise<T> {
    for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
    try {
      return await fn();
    } finally {
      for (const k of keys) {
        const n = (counts.get(k) ?? 1) - 1;
        if (n > 0) counts.set(k, n);
        else counts.delete(k);
      }
    }
  }

  /** `p`, a release of `keys` in this session, just started: the acquires of those names
   *  out now are overtaken by it, and new ones wait until it settles */
  private tracked<T>(keys: readonly string[], p: Promise<T>): Promise<T> {
    for (const k of keys) {
      for (const a of this.asking.get(k) ?? []) a.overtaken = true;
      let out = this.releasesOut.get(k);
      if (!out) this.releasesOut.set(k, (out = new Set()));
      out.add(p);
    }
    const settled = (): void => {
      for (const k of keys) {
        const out = this.releasesOut.get(k);
        out?.delete(p);
        if (out?.size === 0) this.releasesOut.delete(k);
      }
    };
    p.then(settled, settled);
    return p;
  }

  /** settles once no release of `keys` is in flight in this session */
  private async releasesDone(keys: readonly string[]): Promise<void> {
    for (;;) {
      const out = keys.flatMap((k) => [...(this.releasesOut.get(k) ?? [])]);
      if (out.length === 0) return;
      await Promise.allSettled(out);
    }
  }

  /** an acquire of `keys` goes out now (call right before the send) */
  private asked(keys: readonly string[]): Ask {
    const ask: Ask = { keys, overtaken: false };
    for (const k of keys) {
      let out = this.asking.get(k);
      if (!out) this.asking.set(k, (out = new Set()));
      out.add(ask);
    }
    return ask;
  }

  /** its answer is in (call first thing after the await, before anything else can run) */
  private answered(ask: Ask): void {
    for (const k of ask.keys) {
      const out = this.asking.get(k);
      out?.delete(ask);
      if (out?.size === 0) this.asking.delete(k);
    }
  }

  /** an acquire of `name` gave up: watch it for a grant a late copy makes (sweepLate) */
  private watch(kind: Kind, name: string): void {
    const k = key(kind, name);
    this.watched.delete(k);
    if (this.watched.size >= MAX_WATCHED) this.watched.delete(this.watched.keys().next().value as string);
    this.watched.set(k, this.host.now() + WATCH_MS);
  }

  /**
   * After a keepalive whose answer lists the session's grants: release each grant of a
   * watched name that no grant object of this session holds, while no acquire or release
   * of the name is in flight here (docs/client.md "A grant that arrives after the
   * cleanup"). Such a grant was made by a copy of a given-up acquire that the cluster
   * applied after the cleanup release (a relay that sat behind a paused node); nothing
   * else would ever release it while the keepalives go on (a grant whose lock object is
   * being released is not one: it is skipped too). A lock is released by the
   * listed token, which never touches another grant or a wait; a semaphore by name (no
   * grant object of it exists). New acquires of the name wait for the release, as for
   * every cleanup. Names never given up on are left alone: a grant the caller took with
   * the one-shot calls in this session is the caller's.
   */
  private sweepLate(grants: readonly KeepaliveGrant[]): void {
    if (this.state !== 'open' || this.watched.size === 0) return;
    const now = this.host.now();
    for (const [k, until] of this.watched) {
      if (until > now) break;
      this.watched.delete(k);
    }
    for (const g of grants) {
      const kind = kindOf(g);
      const k = key(kind, g.name);
      if (!this.watched.has(k) || this.acquiring.has(k) || this.releasesOut.has(k) || this.holds(kind, g.name, g.fencingToken)) continue;
      // a cleanup still unresolved releases everything of the name: it goes first
      void this.cleanUp(this.unresolved.get(k) ?? { kind, name: g.name, token: kind === 'lock' ? g.fencingToken : undefined, late: true });
    }
  }

  /** does a grant object of this session hold `name` (a lock: with `token`)? */
  private holds(kind: Kind, name: string, token: number): boolean {
    for (const l of this.locks) {
      if (l.name !== name || (l instanceof SemaphoreGrant) !== (kind === 'semaphore')) continue;
      if (kind === 'semaphore' || l.fencingToken === token) return true;
    }
    return false;
  }

  /**
   * After a keepalive whose answer lists the session's grants (docs/api.md "Keepalive
   * answers"): abort every grant the list no longer has — revoked by an administrator or
   * freed by its max hold, while the session lives on. A grant is matched by name and
   * fencing token (a later grant of the same name is another grant), locks and elections
   * in the lock name space, semaphores in theirs. Only grants answered before the
   * keepalive was sent are judged: the server read its state after the keepalive arrived,
   * so it lists every such grant that still stands; a grant answered later may be newer
   * than the list.
   */
  private judgeGrants(grants: KeepaliveGrant[], askedAt: number): void {
    if (this.state !== 'open') return;
    const held = new Set(grants.map((g) => `${kindOf(g)}\0${g.name}\0${g.fencingToken}`));
    // contention (docs/client.md "Contention"): each grant's count of waiting requests
    const waiters = new Map(grants.map((g) => [`${kindOf(g)}\0${g.name}\0${g.fencingToken}`, g.waiters]));
    for (const l of this.locks) {
      const n = waiters.get(`${l instanceof SemaphoreGrant ? 'semaphore' : 'lock'}\0${l.name}\0${l.fencingToken}`);
      if (n !== undefined) l.noteWaiters(n);
    }
    for (const l of [...this.locks]) {
      if ((this.seenAt.get(l) ?? Infinity) > askedAt) continue;
      const kind = l instanceof SemaphoreGrant ? 'semaphore' : 'lock';
      if (held.has(`${kind}\0${l.name}\0${l.fencingToken}`)) continue;
      const what = l instanceof Leadership ? 'leadership of election' : kind;
      l.markLost(`${what} ${l.name} (token ${l.fencingToken}) is no longer held by session ${this.id}: revoked, or freed by its max hold`);
      this.locks.delete(l);
    }
  }

  /**
   * After a keepalive whose answer does not list the grants (an older server), while the
   * session holds locks: ask the server which it still holds
   * (GET /v1/sessions/{id}, linearizable) and abort every lock it no longer lists — revoked
   * by an administrator or freed by its max hold, while the session lives on. Only locks
   * answered before the question was sent are judged: a grant applied later is not yet in
   * the answer. Semaphores are not listed by the session view, so a revoked semaphore grant
   * is not noticed here (its fencing token still fences it). Never throws.
   */
  private async checkRevoked(): Promise<void> {
    const judged = [...this.locks].filter((l) => !(l instanceof SemaphoreGrant));
    if (judged.length === 0 || this.checking || this.state !== 'open') return;
    this.checking = true;
    const askedAt = this.host.now();
    try {
      const held = new Set(await this.host.sessionLocks(this.id, this.signal));
      for (const l of judged) {
        if (held.has(l.name) || !this.locks.has(l) || (this.seenAt.get(l) ?? Infinity) > askedAt) continue;
        l.markLost(`lock ${l.name} (token ${l.fencingToken}) is no longer held by session ${this.id}: revoked, or freed by its max hold`);
        this.locks.delete(l);
      }
    } catch (err) {
      if (this.state === 'open' && !(err instanceof SessionNotFoundError)) this.host.warn(`could not check which locks session ${this.id} still holds; retrying after the next keepalive`, err);
    } finally {
      this.checking = false;
    }
  }

  /** Aborts the signal of every grant of `kind` `name` in this session (but `except`). */
  private dropGrants(kind: Kind, name: string, except?: Lock, token?: number): void {
    for (const l of [...this.locks]) {
      if (l === except || l.name !== name || (l instanceof SemaphoreGrant) !== (kind === 'semaphore')) continue;
      if (token !== undefined && l.fencingToken !== token) continue;
      l.markLost(`${kind} ${name} (token ${l.fencingToken}) was released in session ${this.id}`);
      this.locks.delete(l);
    }
  }

  private stopTimers(): void {
    if (this.keepaliveTimer) clearTimeout(this.keepaliveTimer);
    if (this.lostTimer) clearTimeout(this.lostTimer);
    this.keepaliveTimer = undefined;
    this.lostTimer = undefined;
  }

  /** Final: abort every lock and the session's signal, emit `lost`, free the locks early. */
  private markLost(why: string, cause?: unknown): void {
    if (this.state !== 'open') return;
    this.state = 'lost';
    this.stopTimers();
    const err = new SessionLostError(this.id, why, cause === undefined ? {} : { cause });
    for (const l of this.locks) l.markLost(`lock ${l.name} (token ${l.fencingToken}) is lost: ${why}`, err);
    this.locks.clear();
    this.controller.abort(err);
    this.resolveLost(err);
    this.emit('lost', err);
    // We promised the user the lock is gone; if the server still has the session, end it
    // so waiters get the lock now rather than at expiry. Best effort, bounded.
    if (!(cause instanceof SessionNotFoundError)) {
      this.host.closeSession(this.id, { budgetMs: 2000 }).catch(() => undefined);
    }
  }
}

export { LockLostError };
