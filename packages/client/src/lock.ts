// A held lock, as the client can prove it. `signal` aborts the moment the lock can no
// longer be proven held: its session's proven lease ran out, the server said the session
// is gone, the lock was released, its max hold (maxHoldMs) is about to run out, or the
// server no longer lists it for the session (revoked by an administrator, or freed by max hold). Work done under the lock should pass `fencingToken`
// to every resource it touches (docs/contract.md §3 "Locks", "Fencing tokens"): the signal
// says "stop", the token makes a late writer harmless when stopping was not quick enough.
import { EventEmitter } from 'node:events';
import { LockLostError } from './errors.js';

/** What a Lock needs from its session (kept narrow to avoid an import cycle). */
export interface LockOwner {
  readonly id: string;
  /** client clock (ms) until which the session is proven alive; -Infinity once lost/closed */
  provenUntil(): number;
  /** the session is neither lost nor closed (its end would free the lock anyway) */
  isOpen(): boolean;
  now(): number;
  releaseLock(lock: Lock): Promise<void>;
  checkLock(lock: Lock): Promise<boolean>;
  forget(lock: Lock): void;
}

type LockEvents = {
  /** docs/client.md "Contention": a keepalive found requests waiting on the lock's name
   *  where the one before it found none */
  contended: [{ waiters: number }];
};

export class Lock extends EventEmitter<LockEvents> {
  readonly name: string;
  readonly fencingToken: number;
  readonly sessionId: string;
  readonly ttlMs: number;
  private readonly controller = new AbortController();
  private released = false;
  /** client clock (ms) past which the grant's max hold may have freed it (Infinity: none) */
  private holdUntilMs = Infinity;
  private holdTimer: NodeJS.Timeout | undefined;

  /** 'shared' for a shared (read) grant */
  readonly mode: 'exclusive' | 'shared';
  private waiting = 0;

  constructor(private readonly owner: LockOwner, grant: { name: string; fencingToken: number; ttlMs: number; mode?: 'exclusive' | 'shared' }) {
    super();
    this.mode = grant.mode ?? 'exclusive';
    this.name = grant.name;
    this.fencingToken = grant.fencingToken;
    this.ttlMs = grant.ttlMs;
    this.sessionId = owner.id;
  }

  /** Aborts (reason: LockLostError) when the lock can no longer be proven held. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** True while not released and the session's proven lease has not run out. */
  get held(): boolean {
    const now = this.owner.now();
    return !this.controller.signal.aborted && now < this.owner.provenUntil() && now < this.holdUntilMs;
  }

  /** client clock (ms) until which the grant's max hold cannot have freed it (Infinity: no max hold) */
  get holdUntil(): number {
    return this.holdUntilMs;
  }

  /** @internal the grant's max hold ends no sooner than untilMs on the client's clock: the
   *  signal aborts then (docs/client.md "Maximum hold") */
  limitHold(untilMs: number): void {
    if (!(untilMs < this.holdUntilMs) || this.controller.signal.aborted) return;
    this.holdUntilMs = untilMs;
    if (this.holdTimer) clearTimeout(this.holdTimer);
    const fire = (): void => {
      if (this.owner.now() < this.holdUntilMs) return void (this.holdTimer = setTimeout(fire, Math.max(1, this.holdUntilMs - this.owner.now())));
      this.abort(`lock ${this.name} (token ${this.fencingToken}) reached its max hold: the server frees it then even while the session lives`);
    };
    this.holdTimer = setTimeout(fire, Math.max(0, untilMs - this.owner.now()));
  }

  /** How many requests waited on the lock's name at the session's last keepalive (Chubby's
   *  "conflicting lock request"; 0 until a keepalive says otherwise, or from a server that
   *  does not tell). A long job can yield at a safe point when it is `contended`. */
  get waiters(): number {
    return this.waiting;
  }

  /** someone waits for this lock (as of the last keepalive) */
  get contended(): boolean {
    return this.waiting > 0;
  }

  /** @internal a keepalive's count of the requests waiting on the name */
  noteWaiters(n: number): void {
    const was = this.waiting;
    this.waiting = n;
    if (was === 0 && n > 0 && !this.controller.signal.aborted) this.emit('contended', { waiters: n });
  }

  /** @internal a lock set's release-all (lock-set.ts): marks it released and aborts the
   *  signal before the request is sent; true when the server still needs to be told (as
   *  release() would send), false when it was released already */
  detach(): { send: boolean; lost: boolean } {
    if (this.released) return { send: false, lost: true };
    this.released = true;
    const lost = this.controller.signal.aborted;
    this.abort(`lock ${this.name} (token ${this.fencingToken}) was released`);
    this.owner.forget(this);
    return { send: !lost || this.owner.isOpen(), lost };
  }

  /** Throws LockLostError unless `held`: call it right before an action that needs the lock. */
  assertHeld(): void {
    if (this.held) return;
    const reason: unknown = this.controller.signal.reason;
    if (reason instanceof LockLostError) throw reason;
    throw new LockLostError(this.name, this.fencingToken, `lock ${this.name} (token ${this.fencingToken}) can no longer be proven held`);
  }

  /**
   * Gives the lock up. The signal aborts BEFORE the request is sent: from then on the
   * client cannot prove it holds the lock. Releasing twice is a no-op; so is releasing
   * after the session was lost or closed (its end frees the lock). A lock that could not
   * be proven held while its session is still open is released on the server.
   */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const lost = this.controller.signal.aborted;
    this.abort(`lock ${this.name} (token ${this.fencingToken}) was released`);
    this.owner.forget(this);
    if (!lost || this.owner.isOpen()) await this.owner.releaseLock(this);
  }

  /** The contract's token check (Chubby's CheckSequencer): is this token still the holder's? */
  check(): Promise<boolean> {
    return this.owner.checkLock(this);
  }

  /** @internal the session lost its lease, or was closed */
  markLost(why: string, cause?: unknown): void {
    this.abort(why, cause);
  }

  private abort(message: string, cause?: unknown): void {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    if (this.controller.signal.aborted) return;
    this.controller.abort(new LockLostError(this.name, this.fencingToken, message, cause === undefined ? {} : { cause }));
  }
}
