// A small, obviously-correct reference model of the lock FSM for property tests: plain
// arrays and linear scans, written from the contract (api.md §3 and docs/lock-fsm.md),
// not from fsm.ts. Its exported state uses the snapshot format, so the real FSM's
// exportState can be compared with it directly.

import type { ApplyResult, Command, Envelope, FsmEvent } from '../../src/lock-fsm/index.js';
import type { StateV1, LockTuple, IdemTuple, WaiterTuple } from '../../src/lock-fsm/snapshot.js';
import { modelCycle, type ModelWait } from './wait-for-model.js';

interface MSession { id: string; ttlMs: number; owner: string; lockDelayMs: number }
interface MWaiter { sid: string; owner: string; waitMs: number; since: number; key?: string }
interface MLock { holder: { sid: string; owner: string; token: number } | null; delayMs: number; delaySince: number; queue: MWaiter[] }

export interface ModelLimits { maxSessions: number; maxWaitersPerLock: number; idempotencyTtlMs: number; idempotencyMaxKeys: number }

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export class Model {
  sessions = new Map<string, MSession>();
  locks = new Map<string, MLock>();
  lastToken = 0;
  lastApplied = 0;
  nowMs = 0;
  idem: { key: string; atMs: number; result: ApplyResult }[] = [];

  /** the key of the entry being applied */
  private key: string | undefined;

  constructor(readonly lim: ModelLimits) {}

  apply(index: number, env: Envelope): { result: ApplyResult; events: FsmEvent[]; replayed?: true } {
    this.lastApplied = index;
    this.nowMs = Math.max(this.nowMs, env.atMs);
    this.idem = this.idem.filter((e) => e.atMs > this.nowMs - this.lim.idempotencyTtlMs);
    const key = env.idempotencyKey;
    const hit = key === undefined ? undefined : this.idem.find((e) => e.key === key);
    if (hit) return { result: hit.result, events: [], replayed: true };
    const events: FsmEvent[] = [];
    this.key = key;
    const result = this.run(index, env.cmd, events);
    if (key !== undefined && !(result.ok === false && (result.code === 'too_many_requests' || result.code === 'session_exists'))) {
      if (this.idem.length >= this.lim.idempotencyMaxKeys) this.idem.shift();
      this.idem.push({ key, atMs: this.nowMs, result });
    }
    return { result, events };
  }

  private grant(index: number, name: string, sid: string, owner: string, ev: FsmEvent[]): number {
    const token = Math.max(index, this.lastToken + 1);
    this.lastToken = token;
    const l = this.locks.get(name) ?? { holder: null, delayMs: 0, delaySince: 0, queue: [] };
    l.holder = { sid, owner, token };
    this.locks.set(name, l);
    ev.push({ type: 'granted', name, sessionId: sid, fencingToken: token });
    return token;
  }

  /** the lock has just become free (not in delay): next waiter, or forget the lock */
  private passOn(index: number, name: string, ev: FsmEvent[]): void {
    const l = this.locks.get(name)!;
    const next = l.queue.shift();
    if (next) {
      const token = this.grant(index, name, next.sid, next.owner, ev);
      // the queued acquire's key now answers with the grant
      const e = next.key === undefined ? undefined : this.idem.find((x) => x.key === next.key);
      if (e && e.result.ok && e.result.kind === 'queued' && e.result.name === name && e.result.sessionId === next.sid) {
        e.result = { ok: true, kind: 'acquired', name, sessionId: next.sid, fencingToken: token, ttlMs: this.sessions.get(next.sid)!.ttlMs };
      }
    } else this.locks.delete(name);
  }

  private end(index: number, id: string, reason: 'closed' | 'expired', ev: FsmEvent[]): ApplyResult {
    const s = this.sessions.get(id);
    if (!s) return reason === 'expired' ? { ok: true, kind: 'noop' } : { ok: false, code: 'session_not_found' };
    for (const name of [...this.locks.keys()].sort(cmp)) {
      const l = this.locks.get(name)!;
      const i = l.queue.findIndex((w) => w.sid === id);
      if (i < 0) continue;
      l.queue.splice(i, 1);
      if (!l.holder && l.delayMs === 0 && l.queue.length === 0) this.locks.delete(name);
      ev.push({ type: 'waitEnded', name, sessionId: id, reason: 'session_ended' });
    }
    const released = [...this.locks.entries()].filter(([, l]) => l.holder?.sid === id).map(([n]) => n).sort(cmp);
    for (const name of released) {
      const l = this.locks.get(name)!;
      ev.push({ type: 'released', name, sessionId: id, fencingToken: l.holder!.token, reason });
      l.holder = null;
      if (reason === 'expired' && s.lockDelayMs > 0) {
        l.delayMs = s.lockDelayMs;
        l.delaySince = index;
        ev.push({ type: 'lockDelayStarted', name, delayMs: s.lockDelayMs, since: index });
      } else this.passOn(index, name, ev);
    }
    this.sessions.delete(id);
    ev.push({ type: 'sessionEnded', sessionId: id, reason, released });
    return { ok: true, kind: 'session_closed', sessionId: id, released };
  }

  private run(index: number, cmd: Command, ev: FsmEvent[]): ApplyResult {
    switch (cmd.kind) {
      case 'openSession': {
        if (this.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_exists' };
        if (this.sessions.size >= this.lim.maxSessions) return { ok: false, code: 'too_many_requests', limit: 'sessions' };
        this.sessions.set(cmd.sessionId, { id: cmd.sessionId, ttlMs: cmd.ttlMs, owner: cmd.owner, lockDelayMs: cmd.lockDelayMs });
        ev.push({ type: 'sessionOpened', sessionId: cmd.sessionId, ttlMs: cmd.ttlMs });
        return { ok: true, kind: 'session_opened', sessionId: cmd.sessionId, ttlMs: cmd.ttlMs };
      }
      case 'closeSession': return this.end(index, cmd.sessionId, 'closed', ev);
      case 'expireSession': return this.end(index, cmd.sessionId, 'expired', ev);
      case 'acquire': return this.acquire(index, cmd, ev);
      case 'release': {
        if (!this.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_not_found' };
        const l = this.locks.get(cmd.name);
        if (!l || l.holder?.sid !== cmd.sessionId) return { ok: false, code: 'not_holder' };
        if (cmd.fencingToken !== undefined && cmd.fencingToken !== l.holder.token) return { ok: false, code: 'not_holder' };
        ev.push({ type: 'released', name: cmd.name, sessionId: cmd.sessionId, fencingToken: l.holder.token, reason: 'released' });
        l.holder = null;
        this.passOn(index, cmd.name, ev);
        return { ok: true, kind: 'released', name: cmd.name };
      }
      case 'cancelWait': {
        const s = this.sessions.get(cmd.sessionId);
        if (!s) return { ok: false, code: 'session_not_found' };
        const l = this.locks.get(cmd.name);
        const i = l ? l.queue.findIndex((w) => w.sid === cmd.sessionId && (cmd.since === undefined || w.since === cmd.since)) : -1;
        if (l && i >= 0) {
          l.queue.splice(i, 1);
          if (!l.holder && l.delayMs === 0 && l.queue.length === 0) this.locks.delete(cmd.name);
          ev.push({ type: 'waitEnded', name: cmd.name, sessionId: cmd.sessionId, reason: 'cancelled' });
          return { ok: true, kind: 'wait_cancelled', name: cmd.name, sessionId: cmd.sessionId };
        }
        if (l?.holder?.sid === cmd.sessionId) return { ok: true, kind: 'acquired', name: cmd.name, sessionId: cmd.sessionId, fencingToken: l.holder.token, ttlMs: s.ttlMs };
        return { ok: true, kind: 'noop' };
      }
      case 'endLockDelay': {
        const l = this.locks.get(cmd.name);
        if (l && l.delayMs > 0 && (cmd.since === undefined || l.delaySince === cmd.since)) {
          l.delayMs = 0;
          l.delaySince = 0;
          ev.push({ type: 'lockDelayEnded', name: cmd.name });
          this.passOn(index, cmd.name, ev);
        }
        return { ok: true, kind: 'noop' };
      }
      case 'barrier': return { ok: true, kind: 'noop' };
      // semaphores and shared locks are modelled by shared-model.ts
      default: throw new Error(`the lock model does not model ${cmd.kind}`);
    }
  }

  private acquire(index: number, cmd: Extract<Command, { kind: 'acquire' }>, ev: FsmEvent[]): ApplyResult {
    const ns = cmd.newSession;
    if (ns) {
      if (this.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_exists' };
      if (this.sessions.size >= this.lim.maxSessions) return { ok: false, code: 'too_many_requests', limit: 'sessions' };
    } else if (!this.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_not_found' };
    const sid = cmd.sessionId;
    const owner = cmd.owner ?? (ns ? ns.owner : this.sessions.get(sid)!.owner);
    const open = (): MSession => {
      if (ns) {
        this.sessions.set(sid, { id: sid, ttlMs: ns.ttlMs, owner: ns.owner, lockDelayMs: ns.lockDelayMs });
        ev.push({ type: 'sessionOpened', sessionId: sid, ttlMs: ns.ttlMs });
      }
      return this.sessions.get(sid)!;
    };
    const l = this.locks.get(cmd.name);
    if (!ns && l?.holder?.sid === sid) return { ok: true, kind: 'acquired', name: cmd.name, sessionId: sid, fencingToken: l.holder.token, ttlMs: this.sessions.get(sid)!.ttlMs };
    if (!l || (!l.holder && l.delayMs === 0)) {
      const s = open();
      const token = this.grant(index, cmd.name, sid, owner, ev);
      return { ok: true, kind: 'acquired', name: cmd.name, sessionId: sid, fencingToken: token, ttlMs: s.ttlMs };
    }
    if (cmd.waitMs === 0) {
      return l.holder ? { ok: false, code: 'lock_held', holder: { sessionId: l.holder.sid, owner: l.holder.owner, fencingToken: l.holder.token } } : { ok: false, code: 'lock_held' };
    }
    const pos = ns ? -1 : l.queue.findIndex((w) => w.sid === sid);
    if (pos >= 0) return { ok: true, kind: 'queued', name: cmd.name, sessionId: sid, position: pos + 1 };
    if (l.queue.length >= this.lim.maxWaitersPerLock) return { ok: false, code: 'too_many_requests', limit: 'waiters' };
    // docs/lock-fsm.md "Deadlock detection": a wait that closes a cycle is refused
    const cycle = ns ? null : modelCycle(sid, [{ name: cmd.name, kind: 'lock', blockers: this.blockers(l, l.queue.length) }], (t) => this.waitsOf(t));
    if (cycle !== null) return { ok: false, code: 'deadlock', cycle };
    open();
    l.queue.push({ sid, owner, waitMs: cmd.waitMs, since: index, ...(this.key !== undefined ? { key: this.key } : {}) });
    ev.push({ type: 'waiting', name: cmd.name, sessionId: sid });
    return { ok: true, kind: 'queued', name: cmd.name, sessionId: sid, position: l.queue.length };
  }

  /** whom a request at queue position i of l waits for: its holder, then those ahead, nearest first */
  private blockers(l: MLock, i: number): string[] {
    const out = l.holder ? [l.holder.sid] : [];
    for (let j = i - 1; j >= 0; j--) out.push((l.queue[j] as MWaiter).sid);
    return out;
  }

  /** a session's waits, by lock name */
  private waitsOf(sid: string): ModelWait[] {
    const out: ModelWait[] = [];
    for (const name of [...this.locks.keys()].sort(cmp)) {
      const l = this.locks.get(name) as MLock;
      const i = l.queue.findIndex((w) => w.sid === sid);
      if (i >= 0) out.push({ name, kind: 'lock', blockers: this.blockers(l, i) });
    }
    return out;
  }

  /** the state in snapshot form, for comparison with exportState */
  export(): StateV1 {
    const sessions = [...this.sessions.values()].sort((a, b) => cmp(a.id, b.id)).map((s): [string, number, string, number] => [s.id, s.ttlMs, s.owner, s.lockDelayMs]);
    const locks = [...this.locks.entries()].sort((a, b) => cmp(a[0], b[0])).map(([name, l]): LockTuple => [
      name, l.holder?.sid ?? null, l.holder?.owner ?? null, l.holder?.token ?? 0, l.delayMs,
      l.queue.map((w): WaiterTuple => (w.key === undefined ? [w.sid, w.owner, w.waitMs, w.since] : [w.sid, w.owner, w.waitMs, w.since, w.key])), l.delaySince, [],
    ]);
    const entries = this.idem.map((e): IdemTuple => [e.key, e.atMs, e.result]);
    return { format: 'raftlock/lock-fsm', v: 3, lastApplied: this.lastApplied, lastToken: this.lastToken, sessions, locks, sems: [], elections: [], idem: { nowMs: this.nowMs, entries } };
  }
}
