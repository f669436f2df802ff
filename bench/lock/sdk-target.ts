// raftlock through its TypeScript SDK (@raftlock/client) instead of the generator's thin
// HTTP client: the rows "through the TS SDK with leader routing on and off" of
// BENCHMARKS.md ("Third round"). The client is given EVERY member's URL, as an application
// would be: with leader routing on it learns the leader from the answers' x-raftlock-leader
// header and sends its calls there; with it off it spreads them round-robin, so two calls
// in three pay a follower's relay. Each call is what an application's call costs: an
// Idempotency-Key per mutation, the SDK's retry bookkeeping and answer decoding.
import { RaftlockClient } from '@raftlock/client';
import type { LockTarget, ModeOps, RaftCounters } from './target.js';

export class SdkTarget implements LockTarget {
  readonly system = 'raftlock' as const;
  readonly modes: ModeOps;
  private readonly client: RaftlockClient;

  constructor(readonly endpoint: string, endpoints: string[], leaderRouting: boolean) {
    // the bench's own sessions never lapse (their TTL covers the run): plain calls, no keepalive loop
    this.client = new RaftlockClient({ endpoints, leaderRouting });
    const client = this.client;
    this.modes = {
      async acquireShared(name, sessionId, waitMs) {
        return String((await client.acquire(name, { sessionId, waitMs, mode: 'shared' })).fencingToken);
      },
      async acquireSemaphore(name, sessionId, limit, permits, waitMs) {
        return String((await client.acquireSemaphore(name, { sessionId, limit, permits, waitMs })).fencingToken);
      },
      async releaseSemaphore(name, sessionId) {
        await client.releaseSemaphore(name, sessionId);
      },
    };
  }

  async openSession(ttlMs: number): Promise<string> {
    return (await this.client.openSession({ ttlMs })).sessionId;
  }

  async closeSession(sessionId: string): Promise<void> {
    await this.client.closeSession(sessionId);
  }

  async keepalive(sessionId: string): Promise<void> {
    await this.client.keepalive(sessionId);
  }

  async acquire(name: string, sessionId: string, waitMs: number): Promise<string> {
    return String((await this.client.acquire(name, { sessionId, waitMs })).fencingToken);
  }

  async release(name: string, sessionId: string, handle: string): Promise<void> {
    await this.client.release(name, sessionId, Number(handle));
  }

  async read(name: string): Promise<void> {
    await this.client.getLock(name);
  }

  /** the counters come from the leader through the generator's own client (main.ts) */
  async counters(): Promise<RaftCounters | null> {
    return null;
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
