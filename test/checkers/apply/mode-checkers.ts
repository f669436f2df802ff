// The shared-lock and semaphore checkers of the lock simulation (docs/simulation-lock.md
// "Shared locks and semaphores"). Two views, checked independently of each other:
//  - a shadow over the applied stream (the first applier of each index): per lock its
//    exclusive holder or its shared holders, per semaphore its holders with their permits,
//    and the FIFO queues the stream's queued/granted/wait-ended records imply. A grant
//    beside an incompatible holder, a semaphore grant that takes the sum of permits over
//    the limit it was granted under, or a grant that passes an earlier waiter fails;
//  - every node's FSM state after each apply: no exclusive holder beside shared holders,
//    and on every semaphore the permits held ≤ the limit in force when its most recent
//    holder was granted (each grant checked the sum then, and the sum only falls until
//    the next grant, so this holds at every applied index).
import type { ApplyOutput, Command } from '../../../src/lock-fsm/index.js';
import type { LockFsm } from '../../../src/lock-fsm/index.js';

export type ModeViolation = (checker: string, msg: string) => never;

/** a lock as the state says: its exclusive holder and its shared holders */
export interface LockModeView { name: string; exclusive: string | null; shared: string[] }
/** a semaphore as the state says */
export interface SemView { name: string; limit: number; holders: { sessionId: string; permits: number; fencingToken: number }[] }

export function lockModesOf(fsm: LockFsm): LockModeView[] {
  const out: LockModeView[] = [];
  for (const l of fsm.core.locks.values()) out.push({ name: l.name, exclusive: l.holder?.id ?? null, shared: l.shares ? [...l.shares.keys()] : [] });
  return out;
}

export function semsOf(fsm: LockFsm): SemView[] {
  const out: SemView[] = [];
  for (const s of fsm.core.sems.values()) out.push({ name: s.name, limit: s.limit, holders: [...s.holders].map(([sessionId, h]) => ({ sessionId, permits: h.permits, fencingToken: h.token })) });
  return out;
}

/** no exclusive holder beside any other holder of a lock */
export function checkLockModes(locks: readonly LockModeView[], fail: ModeViolation, where: string): void {
  for (const l of locks) {
    if (l.exclusive !== null && l.shared.length > 0) fail('SharedExclusion', `${where}: ${l.name} held exclusively by ${l.exclusive} beside shared holders ${l.shared.join(', ')}`);
  }
}

/** the permits held ≤ the limit in force at the grant of the most recent holder
 *  (grantLimit: fencing token → the limit its semGranted event carried) */
export function checkSemLimits(sems: readonly SemView[], grantLimit: ReadonlyMap<number, number>, fail: ModeViolation, where: string): void {
  for (const s of sems) {
    if (s.holders.length === 0) continue;
    let sum = 0, last = s.holders[0]!;
    for (const h of s.holders) {
      sum += h.permits;
      if (h.fencingToken > last.fencingToken) last = h;
    }
    const lim = grantLimit.get(last.fencingToken);
    if (lim === undefined) fail('SemaphoreLimit', `${where}: semaphore ${s.name} holder ${last.sessionId} token ${last.fencingToken} was never granted in the applied stream`);
    if (sum > lim) fail('SemaphoreLimit', `${where}: semaphore ${s.name} has ${sum} permits held, over the limit ${lim} in force when ${last.sessionId} (token ${last.fencingToken}) was granted`);
  }
}

type Held = { mode: 'exclusive'; sid: string } | { mode: 'shared'; sids: Set<string> };

/** the shadow of holders, permits and queues over the applied stream */
export class ModeShadow {
  private readonly locks = new Map<string, Held>();
  private readonly sems = new Map<string, Map<string, number>>();
  private readonly lockQueues = new Map<string, string[]>();
  private readonly semQueues = new Map<string, string[]>();
  readonly grantLimit = new Map<number, number>();
  readonly counts = { sharedGrants: 0, semGrants: 0, maxShared: 0, maxSemHolders: 0, fifoChecked: 0 };

  constructor(private readonly fail: ModeViolation) {}

  /** the first apply anywhere of `index` (cmd: the decoded command of a normal entry) */
  onApplied(index: number, cmd: Command | undefined, out: ApplyOutput): void {
    const r = out.result;
    if (cmd && r.ok) {
      if (r.kind === 'released' && cmd.kind === 'release') this.dropLock(cmd.name, cmd.sessionId);
      // a release-all (docs/lock-fsm.md "Lock sets") frees each name it answers released
      if (r.kind === 'released_all' && cmd.kind === 'releaseAll') for (const name of r.released) this.dropLock(name, cmd.sessionId);
      // a set queued: one place in the queue of each name it waits on (its `waiting` events)
      if (r.kind === 'queued_all') for (const e of out.events) if (e.type === 'waiting' && e.sessionId === r.sessionId && !queue(this.lockQueues, e.name).includes(r.sessionId)) queue(this.lockQueues, e.name).push(r.sessionId);
      // an election's leader stepping down frees its lock (election-checker.ts has the rest)
      if (r.kind === 'resigned' && r.wasLeader && cmd.kind === 'resign') this.dropLock(cmd.name, cmd.sessionId);
      if (r.kind === 'sem_released' && cmd.kind === 'semRelease') this.sems.get(cmd.name)?.delete(cmd.sessionId);
      if (r.kind === 'queued' && !queue(this.lockQueues, r.name).includes(r.sessionId)) queue(this.lockQueues, r.name).push(r.sessionId);
      if (r.kind === 'sem_queued' && !queue(this.semQueues, r.name).includes(r.sessionId)) queue(this.semQueues, r.name).push(r.sessionId);
    }
    if (r.ok && r.kind === 'session_closed') this.dropSession(r.sessionId, r.released);
    for (const e of out.events) {
      switch (e.type) {
        case 'sessionEnded': this.dropSession(e.sessionId, e.released); break;
        case 'waitEnded': remove(this.lockQueues, e.name, e.sessionId); break;
        case 'semWaitEnded': remove(this.semQueues, e.name, e.sessionId); break;
        // a revoke or a max hold ends one grant while its session lives
        case 'revoked':
        case 'grantExpired':
          if (e.kind === 'lock') this.dropLock(e.name, e.sessionId);
          else {
            const hs = this.sems.get(e.name);
            hs?.delete(e.sessionId);
            if (hs?.size === 0) this.sems.delete(e.name);
          }
          break;
        case 'granted': {
          this.fifo('lock', this.lockQueues, e.name, e.sessionId, index);
          const h = this.locks.get(e.name);
          if (e.mode === 'shared') {
            this.counts.sharedGrants++;
            if (h?.mode === 'exclusive') this.fail('SharedExclusion', `${e.name} shared to ${e.sessionId} at ${index} while ${h.sid} holds it exclusively`);
            const sids = h?.mode === 'shared' ? h.sids : new Set<string>();
            sids.add(e.sessionId);
            this.locks.set(e.name, { mode: 'shared', sids });
            this.counts.maxShared = Math.max(this.counts.maxShared, sids.size);
          } else {
            if (h !== undefined) this.fail(h.mode === 'shared' ? 'SharedExclusion' : 'MutualExclusion', `${e.name} granted to ${e.sessionId} at ${index} while ${h.mode === 'shared' ? `shared by ${[...h.sids].join(', ')}` : `${h.sid} holds it`}`);
            this.locks.set(e.name, { mode: 'exclusive', sid: e.sessionId });
          }
          break;
        }
        case 'semGranted': {
          this.counts.semGrants++;
          this.fifo('semaphore', this.semQueues, e.name, e.sessionId, index);
          this.grantLimit.set(e.fencingToken, e.limit);
          let hs = this.sems.get(e.name);
          if (hs === undefined) this.sems.set(e.name, (hs = new Map()));
          if (hs.has(e.sessionId)) this.fail('SemaphoreLimit', `semaphore ${e.name} granted to ${e.sessionId} at ${index}, which holds it already`);
          hs.set(e.sessionId, e.permits);
          let sum = 0;
          for (const p of hs.values()) sum += p;
          this.counts.maxSemHolders = Math.max(this.counts.maxSemHolders, hs.size);
          if (sum > e.limit) this.fail('SemaphoreLimit', `semaphore ${e.name} granted ${e.permits} to ${e.sessionId} at ${index}: ${sum} permits held, limit ${e.limit}`);
          break;
        }
        default:
      }
    }
  }

  /** a grant to a waiter must go to the head of its queue; a grant to a non-waiter only
   *  when nobody waits */
  private fifo(what: string, queues: Map<string, string[]>, name: string, sid: string, index: number): void {
    const q = queues.get(name) ?? [];
    const at = q.indexOf(sid);
    if (q.length > 0) this.counts.fifoChecked++;
    if (at > 0) this.fail('Fifo', `${what} ${name} granted to ${sid} at ${index} ahead of earlier waiters ${q.slice(0, at).join(', ')}`);
    if (at < 0 && q.length > 0) this.fail('Fifo', `${what} ${name} granted at once to ${sid} at ${index} while ${q.join(', ')} wait`);
    if (at === 0) q.shift();
    if (q.length === 0) queues.delete(name);
  }

  private dropLock(name: string, sid: string): void {
    const h = this.locks.get(name);
    if (h === undefined) return;
    if (h.mode === 'exclusive') {
      if (h.sid === sid) this.locks.delete(name);
    } else {
      h.sids.delete(sid);
      if (h.sids.size === 0) this.locks.delete(name);
    }
  }

  private dropSession(sid: string, released: readonly string[]): void {
    for (const name of released) this.dropLock(name, sid);
    for (const [name, hs] of this.sems) {
      hs.delete(sid);
      if (hs.size === 0) this.sems.delete(name);
    }
    for (const m of [this.lockQueues, this.semQueues]) for (const name of [...m.keys()]) remove(m, name, sid);
  }
}

function queue(m: Map<string, string[]>, name: string): string[] {
  let q = m.get(name);
  if (q === undefined) m.set(name, (q = []));
  return q;
}

function remove(m: Map<string, string[]>, name: string, sid: string): void {
  const q = m.get(name);
  if (q === undefined) return;
  const at = q.indexOf(sid);
  if (at >= 0) q.splice(at, 1);
  if (q.length === 0) m.delete(name);
}
