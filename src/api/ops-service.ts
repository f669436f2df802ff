// What the operations routes (status page, backups) need from a node, beyond the
// LockService of the contract: this node's own observations and the leader's snapshot.
// The node wiring implements it (src/node/ops-provider.ts); tests may fake it.
import type { RequestContext } from './service.js';

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

export interface BackupResult {
  /** the backup file (src/ops/backup-file.ts) */
  file: Buffer;
  index: number;
  term: number;
}

export interface OpsService {
  observations(): NodeObservations;
  heldSince(name: string, fencingToken: number): HeldSince;
  /** Leader only: confirm leadership with a quorum round (ReadIndex, §6.4), then snapshot
   *  the application at the applied index, which is at or past every write acknowledged
   *  before the request arrived. Throws ApiError unavailable/timeout. */
  backup(ctx: RequestContext): Promise<BackupResult>;
}
