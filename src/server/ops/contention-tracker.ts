// What the status page shows of contention (docs/operations.md "Status page"), from what
// this node already has: the events of the entries it applies. It remembers when it
// applied each current wait (the FSM keeps no clocks: docs/architecture.md "Rules", rule 3),
// so the page can show the most contended locks with their longest current wait, and it
// counts per second the grants it applied and how long the granted requests had waited,
// for the page's live chart. Local, best effort, bounded: waits this node did not see begin
// (it started, or installed a snapshot, after them) are "waiting at least since then".
import type { ApplyOutput, LockFsm } from '../../lock-fsm/index.js';
import type { ActivityPoint, ContendedLock } from '../../api/ops-service.js';

/** seconds of activity the chart keeps */
export const ACTIVITY_SECONDS = 60;

interface Bucket {
  /** wall clock of the second's start (ms) */
  at: number;
  grants: number;
  /** grants that ended a wait this node saw begin */
  waited: number;
  waitSumMs: number;
  waitMaxMs: number;
}

/** a lock's waits and a semaphore's are apart: the prefix keeps them so */
const key = (semaphore: boolean, name: string): string => `${semaphore ? 's' : 'l'}${name}`;

export class ContentionTracker {
  /** kind+name → session id → when this node applied the wait's start (exact), or when it
   *  started watching a wait already there (seeded from the state: not exact) */
  private readonly waits = new Map<string, Map<string, { at: number; exact: boolean }>>();
  /** false until the waits of the applied state are known (start, snapshot install) */
  private seeded = false;
  private blindSince: number;
  private readonly buckets: Bucket[] = [];

  constructor(private readonly wallMs: () => number) {
    this.blindSince = wallMs();
  }

  /** driver onApplied, on every node */
  onApplied(out: ApplyOutput | undefined): void {
    if (!out || out.events.length === 0) return;
    const now = this.wallMs();
    for (const e of out.events) {
      switch (e.type) {
        case 'waiting':
        case 'semWaiting': {
          const k = key(e.type === 'semWaiting', e.name);
          let m = this.waits.get(k);
          if (m === undefined) this.waits.set(k, (m = new Map()));
          m.set(e.sessionId, { at: now, exact: true });
          break;
        }
        case 'granted':
        case 'semGranted': {
          const b = this.bucket(now);
          b.grants++;
          const k = key(e.type === 'semGranted', e.name);
          const since = this.waits.get(k)?.get(e.sessionId);
          if (since !== undefined) {
            this.drop(k, e.sessionId);
            // a wait that began before this node watched has no known length
            if (since.exact) {
              const ms = Math.max(0, now - since.at);
              b.waited++;
              b.waitSumMs += ms;
              b.waitMaxMs = Math.max(b.waitMaxMs, ms);
            }
          }
          break;
        }
        case 'waitEnded':
        case 'semWaitEnded':
          this.drop(key(e.type === 'semWaitEnded', e.name), e.sessionId);
          break;
      }
    }
  }

  /** a snapshot replaced the state: its waits began while this node was not looking */
  onSnapshotRestored(): void {
    this.waits.clear();
    this.seeded = false;
    this.blindSince = this.wallMs();
  }

  /**
   * The `limit` locks with the most requests waiting (ties: the longest current wait
   * first), each with its waiter count (from the state) and its oldest wait as this node
   * saw it begin (`exact` false: it began before this node was watching).
   */
  contended(fsm: LockFsm, limit: number): ContendedLock[] {
    this.seed(fsm);
    const out: ContendedLock[] = [];
    for (const [k, m] of this.waits) {
      if (k[0] !== 'l' || m.size === 0) continue;
      const name = k.slice(1);
      const l = fsm.getLock(name);
      if (l.waiters === 0) continue;
      let oldest = Infinity;
      let exact = true;
      for (const t of m.values()) {
        if (t.at < oldest || (t.at === oldest && !t.exact)) exact = t.exact;
        oldest = Math.min(oldest, t.at);
      }
      const row: ContendedLock = { name, waiters: l.waiters, waiting_since_ms: oldest, waiting_since_exact: exact };
      const h = l.holders?.[0];
      if (h) row.holder = { session_id: h.sessionId, owner: h.owner, fencing_token: h.fencingToken, mode: h.mode, holders: l.holders?.length ?? 1 };
      if (l.inDelay) row.in_delay = true;
      out.push(row);
    }
    return out.sort((a, b) => b.waiters - a.waiters || a.waiting_since_ms - b.waiting_since_ms || (a.name < b.name ? -1 : 1)).slice(0, Math.max(0, limit));
  }

  /** grants and waits per second over the last ACTIVITY_SECONDS, oldest first, gaps as zeros */
  activity(): ActivityPoint[] {
    const now = Math.floor(this.wallMs() / 1000) * 1000;
    const byAt = new Map(this.buckets.map((b) => [b.at, b]));
    const out: ActivityPoint[] = [];
    for (let at = now - (ACTIVITY_SECONDS - 1) * 1000; at <= now; at += 1000) {
      const b = byAt.get(at);
      out.push({ at_ms: at, grants: b?.grants ?? 0, waited: b?.waited ?? 0, wait_avg_ms: b && b.waited > 0 ? Math.round(b.waitSumMs / b.waited) : 0, wait_max_ms: b?.waitMaxMs ?? 0 });
    }
    return out;
  }

  /** waits being tracked, for tests and the bound check */
  get trackedWaits(): number {
    let n = 0;
    for (const m of this.waits.values()) n += m.size;
    return n;
  }

  /** the waits of the applied state that began before this node watched: since blindSince */
  private seed(fsm: LockFsm): void {
    if (this.seeded) return;
    this.seeded = true;
    for (const w of fsm.waits()) {
      const k = key(w.semaphore === true, w.name);
      let m = this.waits.get(k);
      if (m === undefined) this.waits.set(k, (m = new Map()));
      if (!m.has(w.sessionId)) m.set(w.sessionId, { at: this.blindSince, exact: false });
    }
    // a lock set is listed once by fsm.waits(): its other places too (docs/lock-fsm.md "Lock sets")
    for (const s of fsm.core.lockSets) {
      for (const p of s.members) {
        const k = key(false, p.lock.name);
        let m = this.waits.get(k);
        if (m === undefined) this.waits.set(k, (m = new Map()));
        if (!m.has(s.session.id)) m.set(s.session.id, { at: this.blindSince, exact: false });
      }
    }
  }

  private drop(k: string, sessionId: string): void {
    const m = this.waits.get(k);
    if (m === undefined) return;
    m.delete(sessionId);
    if (m.size === 0) this.waits.delete(k);
  }

  private bucket(now: number): Bucket {
    const at = Math.floor(now / 1000) * 1000;
    const last = this.buckets[this.buckets.length - 1];
    if (last !== undefined && last.at === at) return last;
    const b: Bucket = { at, grants: 0, waited: 0, waitSumMs: 0, waitMaxMs: 0 };
    this.buckets.push(b);
    while (this.buckets.length > 0 && (this.buckets[0] as Bucket).at <= at - ACTIVITY_SECONDS * 1000) this.buckets.shift();
    return b;
  }
}
