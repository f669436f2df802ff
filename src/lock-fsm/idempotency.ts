// The Idempotency-Key table (api.md §3 "Idempotency"): key → the first result, so that a
// client retrying after a 504 (outcome unknown) gets the first answer and nothing is done
// twice. It lives in replicated state (and in snapshots) so it survives leader changes
// and restarts.
//
// Ageing uses log time only: each envelope carries the proposing leader's clock (atMs).
// `nowMs` is the high-water mark of those values, so a new leader whose clock lags cannot
// make old keys young again, and every replica prunes at exactly the same entries.
// Keys are recorded at `nowMs`, so the insertion queue is also sorted by time, and both
// pruning by age and eviction by size pop from its front: O(1) amortized per command.

import type { ApplyResult } from './results.js';

interface Stored {
  atMs: number;
  result: ApplyResult;
}

export interface IdempotencyEntry {
  key: string;
  atMs: number;
  result: ApplyResult;
}

export class IdempotencyTable {
  private readonly map = new Map<string, Stored>();
  /** keys in insertion order; queue[head..] are live (or stale if evicted, see prune) */
  private queue: string[] = [];
  private head = 0;
  private now = 0;

  constructor(readonly ttlMs: number, readonly maxKeys: number) {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 600_000) throw new Error(`idempotencyTtlMs must be an integer >= 600000 (the contract keeps keys 10 minutes), got ${ttlMs}`);
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) throw new Error(`idempotencyMaxKeys must be a positive integer, got ${maxKeys}`);
  }

  get size(): number {
    return this.map.size;
  }

  /** the log-time high-water mark */
  get nowMs(): number {
    return this.now;
  }

  /** Moves log time forward (never back) and evicts keys older than ttlMs. */
  advance(atMs: number): void {
    if (atMs > this.now) this.now = atMs;
    const horizon = this.now - this.ttlMs;
    while (this.head < this.queue.length) {
      const st = this.map.get(this.queue[this.head] as string);
      if (st === undefined) throw new Error('IdempotencyTable: queue and map disagree');
      if (st.atMs > horizon) break;
      this.popFront();
    }
  }

  get(key: string): ApplyResult | undefined {
    return this.map.get(key)?.result;
  }

  /** Records the first result for key. Past maxKeys, the oldest key is dropped: the
   *  table stays bounded, at the price of an older retry being executed again. */
  put(key: string, result: ApplyResult): void {
    if (this.map.has(key)) throw new Error(`IdempotencyTable: key ${JSON.stringify(key)} recorded twice`);
    while (this.map.size >= this.maxKeys) this.popFront();
    this.map.set(key, { atMs: this.now, result: freeze(result) });
    this.queue.push(key);
  }

  /** A queued acquire was granted: its key's answer becomes the grant (same age, same
   *  place in the eviction order). Only a stored 'queued' answer for the same lock and
   *  session is replaced; a key that has aged out stays gone. */
  settle(key: string, grant: Extract<ApplyResult, { kind: 'acquired' | 'sem_acquired' }>): void {
    const st = this.map.get(key);
    if (st === undefined) return;
    const r = st.result;
    const queued = grant.kind === 'acquired' ? 'queued' : 'sem_queued';
    if (!(r.ok && r.kind === queued && r.name === grant.name && r.sessionId === grant.sessionId)) return;
    st.result = freeze(grant);
  }

  /** A queued lock set was granted (docs/lock-fsm.md "Lock sets"): as settle, for the
   *  acquireAll's stored 'queued_all' of the same session and wait (`since`). */
  settleSet(key: string, since: number, grant: Extract<ApplyResult, { kind: 'acquired_all' }>): void {
    const st = this.map.get(key);
    if (st === undefined) return;
    const r = st.result;
    if (!(r.ok && r.kind === 'queued_all' && r.sessionId === grant.sessionId && r.since === since)) return;
    st.result = freeze(grant);
  }

  /** The service's withdrawal released a grant that won the race against the client's own
   *  release (Command release.settles): that release's stored `not_holder` becomes the
   *  `released` the client was answered. Any other stored answer stays. */
  settleRelease(key: string, name: string, kind: 'released' | 'sem_released' = 'released'): void {
    const st = this.map.get(key);
    if (st === undefined) return;
    const r = st.result;
    if (!(!r.ok && r.code === 'not_holder')) return;
    st.result = freeze({ ok: true, kind, name });
  }

  private popFront(): void {
    const key = this.queue[this.head] as string;
    this.map.delete(key);
    this.head++;
    // Compact once the dead prefix dominates: each key is copied O(1) times amortized.
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  /** entries oldest first (the eviction order, which is part of the state) */
  *entries(): Generator<IdempotencyEntry> {
    for (let i = this.head; i < this.queue.length; i++) {
      const key = this.queue[i] as string;
      const st = this.map.get(key) as Stored;
      yield { key, atMs: st.atMs, result: st.result };
    }
  }

  /** Rebuilds from a snapshot; the caller has validated entries (sorted by atMs, unique keys). */
  load(nowMs: number, entries: readonly IdempotencyEntry[]): void {
    this.map.clear();
    this.queue = [];
    this.head = 0;
    this.now = nowMs;
    for (const e of entries) {
      this.map.set(e.key, { atMs: e.atMs, result: freeze(e.result) });
      this.queue.push(e.key);
    }
  }
}

/** Stored results are handed to every retry: freeze them so no caller can alter history. */
function freeze(r: ApplyResult): ApplyResult {
  if (r.ok && r.kind === 'session_closed') Object.freeze(r.released);
  if (!r.ok && r.code === 'lock_held' && r.holder) Object.freeze(r.holder);
  // lock sets and deadlocks (lock-sets.ts, deadlock.ts): their lists too
  const rows = r.ok ? (r.kind === 'acquired_all' ? r.grants : r.kind === 'queued_all' ? r.names : r.kind === 'released_all' ? r.released : undefined) : r.code === 'deadlock' ? r.cycle : r.code === 'lock_held' ? r.blocked : undefined;
  if (rows !== undefined) {
    for (const x of rows) {
      if (typeof x !== 'object') continue;
      if ('holder' in x && x.holder !== undefined) Object.freeze(x.holder);
      Object.freeze(x);
    }
    Object.freeze(rows);
  }
  return Object.freeze(r);
}
