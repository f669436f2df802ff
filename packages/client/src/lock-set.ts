// A lock set (docs/contract.md §5 "Lock sets"; docs/client.md "Several locks at once"):
// several locks granted together by one acquire-all, each a Lock of its own (its own
// fencing token, its own signal, released, revoked or ended at its max hold on its own) and
// one signal for the set, which aborts the moment ANY of them can no longer be proven held:
// work that needs all of them must stop then. release() gives them back in one request.
import { EventEmitter } from 'node:events';
import { InvalidRequestError } from './errors.js';
import type { Lock } from './lock.js';

/** What a LockSet needs from its session (kept narrow to avoid an import cycle). */
export interface LockSetOwner {
  /** release-all of these locks' names in one request (it also ends any wait on them) */
  releaseAll(locks: Lock[]): Promise<void>;
  /** a per-name release with the lock's token: a lock of the set that was already lost
   *  (revoked, or its max hold ran out) must not release a later grant of its name */
  releaseOne(lock: Lock): Promise<void>;
}

type LockSetEvents = {
  /** one of the set's locks became contended (Lock's 'contended') */
  contended: [{ lock: Lock; waiters: number }];
};

export class LockSet extends EventEmitter<LockSetEvents> {
  /** the locks, in the order their names were asked for */
  readonly locks: readonly Lock[];
  readonly sessionId: string;
  /** name → fencing token, for the resource writes of each name */
  readonly fencingTokens: Readonly<Record<string, number>>;
  /** aborts (reason: the first LockLostError) when any lock of the set can no longer be proven held */
  readonly signal: AbortSignal;
  private released = false;

  /** @internal use Session.lockAll */
  constructor(locks: Lock[], private readonly owner: LockSetOwner) {
    super();
    if (locks.length === 0) throw new InvalidRequestError('invalid_request', 'a lock set needs at least one lock');
    this.locks = Object.freeze([...locks]);
    this.sessionId = (locks[0] as Lock).sessionId;
    this.fencingTokens = Object.freeze(Object.fromEntries(locks.map((l) => [l.name, l.fencingToken])));
    this.signal = AbortSignal.any(locks.map((l) => l.signal));
    for (const l of locks) l.on('contended', (e) => this.emit('contended', { lock: l, waiters: e.waiters }));
  }

  /** the set's lock of `name` */
  lock(name: string): Lock {
    const l = this.locks.find((x) => x.name === name);
    if (l === undefined) throw new InvalidRequestError('invalid_request', `lock ${name} is not in this set (${this.locks.map((x) => x.name).join(', ')})`);
    return l;
  }

  /** the fencing token of the set's lock of `name` */
  tokenOf(name: string): number {
    return this.lock(name).fencingToken;
  }

  /** every lock of the set is proven held (checked synchronously: use it right before an action) */
  get held(): boolean {
    return this.locks.every((l) => l.held);
  }

  /** some lock of the set has requests waiting on it (as of the last keepalive) */
  get contended(): boolean {
    return this.locks.some((l) => l.contended);
  }

  /** throws the LockLostError of the first lock not held */
  assertHeld(): void {
    for (const l of this.locks) l.assertHeld();
  }

  /**
   * Gives every lock of the set back: each signal aborts BEFORE the request is sent, then
   * one release-all (a lock lost meanwhile is released by its token alone). Twice, or after
   * the session was lost or closed, it does nothing.
   */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const batch: Lock[] = [];
    const lost: Lock[] = [];
    for (const l of this.locks) {
      const d = l.detach();
      if (!d.send) continue;
      if (d.lost) lost.push(l);
      else batch.push(l);
    }
    const jobs: Promise<void>[] = lost.map((l) => this.owner.releaseOne(l));
    if (batch.length > 0) jobs.unshift(this.owner.releaseAll(batch));
    const failed = (await Promise.allSettled(jobs)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}
