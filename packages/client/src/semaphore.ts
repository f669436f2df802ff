// A semaphore grant: `permits` of a semaphore's `limit`, held in a session. It is a Lock
// in every way that matters for safety — `signal` aborts the moment the session's lease
// can no longer be proven, `release()` aborts it before the request is sent, and
// `fencingToken` comes from the same global sequence as lock tokens (docs/contract.md §4
// "Semaphores") — so it reuses lock.ts rather than repeating it.
import { Lock, type LockOwner } from './lock.js';
import type { SemaphoreGrantInfo } from './wire.js';

export class SemaphoreGrant extends Lock {
  /** permits this grant holds */
  readonly permits: number;
  /** the semaphore's limit when it was granted */
  readonly limit: number;

  constructor(owner: LockOwner, grant: SemaphoreGrantInfo) {
    super(owner, grant);
    this.permits = grant.permits;
    this.limit = grant.limit;
  }
}
