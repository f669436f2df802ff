// What a workload needs from a lock service, so the same client loops drive raftlock's
// REST API and etcd's v3 JSON gateway. Every call is one HTTP request; a `handle` is
// whatever the service needs to release what it granted (raftlock: the fencing token,
// etcd: the lock's key).
import type { JsonHttp } from './http.js';

export type SystemName = 'raftlock' | 'etcd';

/** Raft-level counters read from the leader's /metrics (and /v1/cluster) */
export interface RaftCounters {
  /** log entries committed (commit index, or etcd's proposals committed) */
  entries: number;
  /** synced writes on the leader (raftlock: LevelDB batches with sync; etcd: WAL fsyncs) */
  fsyncs: number;
  /** total seconds those synced writes took (mean sync latency = fsyncSeconds / fsyncs) */
  fsyncSeconds: number;
  /** Raft messages the leader sent to peers (raftlock only) */
  peerMessages?: number;
  /** CPU seconds used so far by each member (process_cpu_seconds_total), by API endpoint */
  memberCpuSeconds?: Record<string, number>;
  /** CPU seconds used so far by this load generator */
  generatorCpuSeconds?: number;
  /** when these were read (performance.now(), ms) */
  atMs?: number;
}

/** Shared locks and semaphores (docs/contract.md §4): raftlock only — etcd has no such
 *  primitive (its read-write lock and semaphore are client-side recipes), so a target
 *  without it runs no `shared` or `semaphore` row. */
export interface ModeOps {
  /** a shared (read) grant, waiting FIFO up to waitMs; returns the release handle */
  acquireShared(name: string, sessionId: string, waitMs: number): Promise<string>;
  /** `permits` of semaphore `name` (limit `limit`), waiting FIFO up to waitMs */
  acquireSemaphore(name: string, sessionId: string, limit: number, permits: number, waitMs: number): Promise<string>;
  releaseSemaphore(name: string, sessionId: string): Promise<void>;
}

export interface LockTarget {
  readonly system: SystemName;
  /** absent: the system has no shared locks or semaphores */
  readonly modes?: ModeOps;
  /** the API URL the clients talk to */
  readonly endpoint: string;
  openSession(ttlMs: number): Promise<string>;
  closeSession(sessionId: string): Promise<void>;
  keepalive(sessionId: string): Promise<void>;
  /** resolves once granted (waiting in the queue up to waitMs); returns the release handle */
  acquire(name: string, sessionId: string, waitMs: number): Promise<string>;
  release(name: string, sessionId: string, handle: string): Promise<void>;
  /** one linearizable read of the lock */
  read(name: string): Promise<void>;
  counters(): Promise<RaftCounters | null>;
  close(): Promise<void>;
}

/** A cluster under test: its API endpoints and how to find the current leader. */
export interface Deployment {
  readonly system: SystemName;
  /** do its targets have ModeOps (shared locks and semaphores)? */
  readonly hasModes: boolean;
  readonly endpoints: string[];
  readonly description: string;
  /** the leader's API URL (polls until one is known) */
  leader(): Promise<string>;
  /** a member's API URL that is not the leader's (polls until a leader is known; throws
   *  when the deployment has one member): the `follower` topology's entry point */
  follower(): Promise<string>;
  /** process_cpu_seconds_total of every member, by API endpoint (null if one cannot be read) */
  cpuSeconds(): Promise<Record<string, number> | null>;
  /** a target whose HTTP pool has `connections` keep-alive connections to `endpoint` */
  target(endpoint: string, connections: number): LockTarget;
  stop(): Promise<void>;
}

/** An endpoint of `endpoints` other than `leader`, or a clear error when there is none. */
export function notLeader(endpoints: readonly string[], leader: string): string {
  const f = endpoints.find((e) => e !== leader);
  if (f === undefined) throw new Error(`no follower to talk to: the deployment has one member (${leader})`);
  return f;
}

/** Sum of every sample of metric `name` (all label sets) in Prometheus text format. */
export function sumMetric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum += v;
  }
  return sum;
}

export type { JsonHttp };

/** process_cpu_seconds_total of every endpoint's /metrics, by endpoint, or null. */
export async function memberCpuSeconds(endpoints: string[]): Promise<Record<string, number> | null> {
  try {
    const texts = await Promise.all(endpoints.map(async (e) => {
      const res = await fetch(`${e}/metrics`, { signal: AbortSignal.timeout(2000) });
      if (!res.ok) throw new Error(`${e}/metrics: ${res.status}`);
      return res.text();
    }));
    return Object.fromEntries(endpoints.map((e, i) => [e, sumMetric(texts[i]!, 'process_cpu_seconds_total')]));
  } catch {
    return null;
  }
}
