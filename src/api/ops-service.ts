// What the operations routes (status page, backups) need from a node, beyond the
// LockService of the contract: this node's own observations and the leader's snapshot.
// The node wiring implements it (src/server/ops/ops-provider.ts); tests may fake it.
import type { RequestContext } from './service.js';
import type { Result } from './service-result.js';

export interface LeaderChange {
  /** wall clock (ms since epoch) when this node saw the change */
  at_ms: number;
  /** null: this node knew no leader from then on */
  leader_id: string | null;
  term: number;
}

export interface NodeObservations {
  node_id: string;
  /** wall clock when this process started: observations begin there */
  node_started_at_ms: number;
  /** leader changes this node saw within the last hour, oldest first */
  leader_changes: LeaderChange[];
  sessions: number;
  locks_held: number;
  waiters: number;
  locks_in_delay: number;
  last_token: number;
}

export interface HeldSince {
  /** wall clock when this node applied the grant; when `exact` is false, the lock was
   *  already held when this node started (or restored a snapshot) and it is a lower bound */
  since_ms: number;
  exact: boolean;
}

/** a lock with requests waiting on it (the status page's "Most contended locks") */
export interface ContendedLock {
  name: string;
  waiters: number;
  /** wall clock when the oldest current wait began, as this node applied it; when `exact`
   *  is false it began before this node was watching and this is a lower bound */
  waiting_since_ms: number;
  waiting_since_exact: boolean;
  /** the first holder (in grant order) and how many hold it; absent while free */
  holder?: { session_id: string; owner: string; fencing_token: number; mode: 'exclusive' | 'shared'; holders: number };
  /** free but in lock-delay */
  in_delay?: true;
}

/** one second of this node's applied grants (the status page's live chart) */
export interface ActivityPoint {
  /** wall clock of the second's start */
  at_ms: number;
  /** grants applied (locks, shares, elections, semaphore permits) */
  grants: number;
  /** of those, grants that ended a wait this node saw begin, and how long they waited */
  waited: number;
  wait_avg_ms: number;
  wait_max_ms: number;
}

export interface BackupResult {
  /** the backup file (src/server/ops/format/backup-file.ts) */
  file: Buffer;
  index: number;
  term: number;
}

export interface OpsService {
  observations(): NodeObservations;
  heldSince(name: string, fencingToken: number): HeldSince;
  /** the most contended locks, most waiters first (optional: a source without it shows none) */
  contended?(limit: number): ContendedLock[];
  /** grants and waits per second, the last minute, oldest first */
  activity?(): ActivityPoint[];
  /** Leader only: confirm leadership with a quorum round (ReadIndex, §6.4), then snapshot
   *  the application at the applied index, which is at or past every write acknowledged
   *  before the request arrived. Refused unavailable/timeout when it cannot confirm. */
  backup(ctx: RequestContext): Promise<Result<BackupResult>>;
}
