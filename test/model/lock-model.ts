// THE reference model of raftlock's lock state machine (docs/lock-fsm.md, docs/contract.md
// §3–4), written from the documents, not from src/lock-fsm: plain arrays and linear scans,
// obviously correct rather than fast. One model for every test that needs to know what
// the state machine should have done:
// - the property tests (test/lock-fsm/*.property.test.ts) apply random commands to it and
//   to LockFsm and compare results, events, views and the exported state after each one;
// - the lock simulator (test/sim/lock, test/checkers/apply/model-checker.ts `ModelAgreement`) applies the committed
//   log to it once, in index order, and compares every node's result and events;
// - jepsen-lite's linearizability checker (test/model/history-model.ts over wgl.ts) maps
//   each operation of a history to its commands and searches for an order in which the
//   model gives every answer the clients got.
//
// Covered: sessions (TTL, owner, lock-delay; limits on sessions and waiters), exclusive and
// shared locks with FIFO queues, elections (campaign, proclaim, resign, the leader's
// value), semaphores (limit, resize, FIFO), revocation and max hold (every grant keeps its
// max hold, 0: none, and the log time it was made), acquires that open their session
// (newSession), Idempotency-Keys (first answer replayed; aged out in log time; a queued
// acquire's key answers the grant once made), and the snapshot state (export(), in the
// shape of exportState). Not covered: principals and actors (docs/security.md), the
// lock-count limit. Its views use the shapes of LockFsm's queries so they compare directly.
//
// Fencing tokens: max(index, last token + 1). The history models apply a grant whose token
// a client saw at index = that token, so the model agrees exactly when the token is above
// every earlier one; a grant nobody saw gets a placeholder (index 0: last + 1) that
// `retoken` moves up when a later answer shows it.
//
// Adding to it (docs/jepsen-lite.md "The model"): a new command is a case of run() plus
// its view; an Idempotency-Key rule lives in apply() (the first answer is stored with what
// the key is bound to); a lock set (acquireAll/releaseAll) is one command over several
// names, so its history ops partition by the set, not by one name (history-model.ts).

import type { ApplyResult, BlockedName, Command, ElectionInfo, Envelope, FsmEvent, HoldInfo, LockInfo, LockWaiterInfo, SemaphoreInfo } from '../../src/lock-fsm/index.js';
import type { ElectionTuple, HoldTuple, HoldWaitTuple, IdemTuple, LockTuple, SemTuple, SessionTuple, ShareTuple, SetTuple, StateV1, WaiterTuple, WaitTimeTuple } from '../../src/lock-fsm/snapshot.js';
import { bindingTuple, modelBinding, modelReuse, type ModelBinding } from './model-keys.js';
import { modelCycle, type ModelWait } from './wait-for-model.js';

type Mode = 'exclusive' | 'shared';
/** value: an election's (a campaign's grant or wait: docs/lock-fsm.md "Elections") */
interface MHolder { sid: string; owner: string; token: number; mode: Mode; maxHoldMs: number; at: number; value?: string }
/** queuedAtMs: the log time the wait was queued at (snapshot version 5's waitTimes) */
/** setSince: a lock set's place (docs/lock-fsm.md "Lock sets"): the `since` of the set it belongs to */
interface MWait { sid: string; owner: string; mode: Mode; since: number; key?: string; maxHoldMs: number; value?: string; waitMs: number; queuedAtMs: number; setSince?: number }
/** a waiting lock set: one place (an MWait with setSince = since) in the queue of every name
 *  of `names` not in `held`; identified by (sid, since) */
interface MSet { sid: string; since: number; names: string[]; held: string[]; mode: Mode; key?: string }
interface MLock { holders: MHolder[]; queue: MWait[]; delayMs: number; delaySince: number }
interface MSemHolder { sid: string; owner: string; permits: number; token: number; maxHoldMs: number; at: number }
interface MSemWait { sid: string; owner: string; permits: number; since: number; key?: string; maxHoldMs: number; waitMs: number; queuedAtMs: number }
interface MSem { limit: number; holders: MSemHolder[]; queue: MSemWait[] }
interface MSession { ttlMs: number; owner: string; lockDelayMs: number }
interface MIdem { key: string; atMs: number; result: ApplyResult; binding: ModelBinding }

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export interface ModelLimits {
  maxWaitersPerLock: number;
  /** open sessions beyond this answer too_many_requests (default: no limit) */
  maxSessions?: number;
  /** a key is forgotten this long in log time after its first apply (default: never) */
  idempotencyTtlMs?: number;
  /** at most this many keys; the oldest goes first (default: no limit) */
  idempotencyMaxKeys?: number;
}

/** the session a command names: an existing one, or the one its newSession opens */
type Acquirer = { refused: ApplyResult } | { s: MSession | null; sid: string; owner: string; open: () => MSession };

export class LockModel {
  sessions = new Map<string, MSession>();
  locks = new Map<string, MLock>();
  sems = new Map<string, MSem>();
  /** waiting lock sets, in the order they queued */
  sets: MSet[] = [];
  lastToken = 0;
  lastApplied = 0;
  /** Idempotency-Keys in first-apply order (ageing drops from the front) */
  idem: MIdem[] = [];
  /** log time: the highest atMs applied */
  nowMs = 0;
  private key: string | undefined;

  constructor(readonly lim: ModelLimits) {}

  /** a deep copy (the history models branch on it) */
  clone(): LockModel {
    const m = new LockModel(this.lim);
    for (const [k, v] of this.sessions) m.sessions.set(k, { ...v });
    for (const [k, l] of this.locks) m.locks.set(k, { holders: l.holders.map((h) => ({ ...h })), queue: l.queue.map((w) => ({ ...w })), delayMs: l.delayMs, delaySince: l.delaySince });
    for (const [k, sem] of this.sems) m.sems.set(k, { limit: sem.limit, holders: sem.holders.map((h) => ({ ...h })), queue: sem.queue.map((w) => ({ ...w })) });
    m.sets = this.sets.map((x) => ({ ...x }));
    m.lastToken = this.lastToken;
    m.lastApplied = this.lastApplied;
    m.idem = this.idem.map((e) => ({ ...e }));
    m.nowMs = this.nowMs;
    return m;
  }

  apply(index: number, env: Envelope): { result: ApplyResult; events: FsmEvent[]; replayed?: true } {
    this.lastApplied = index;
    this.nowMs = Math.max(this.nowMs, env.atMs);
    const ttl = this.lim.idempotencyTtlMs;
    if (ttl !== undefined) this.idem = this.idem.filter((e) => e.atMs > this.nowMs - ttl);
    const key = env.idempotencyKey;
    const hit = key === undefined ? undefined : this.idem.find((e) => e.key === key);
    if (hit) {
      const refused = modelReuse(hit.binding, modelBinding(env));
      return refused === null ? { result: hit.result, events: [], replayed: true } : { result: refused, events: [] };
    }
    this.key = key;
    const ev: FsmEvent[] = [];
    const result = this.run(index, env.cmd, ev);
    if (key !== undefined && !(!result.ok && (result.code === 'too_many_requests' || result.code === 'session_exists'))) {
      if (this.lim.idempotencyMaxKeys !== undefined && this.idem.length >= this.lim.idempotencyMaxKeys) this.idem.shift();
      this.idem.push({ key, atMs: this.nowMs, result, binding: modelBinding(env) });
    }
    return { result, events: ev };
  }

  private token(index: number): number {
    this.lastToken = Math.max(index, this.lastToken + 1);
    return this.lastToken;
  }

  /** A grant's token became known (a history model's placeholder, see the header): the
   *  grant of `sid` on `name` with token `from` gets `to`; the last token follows it when
   *  it was the last. Nothing else changes. */
  retoken(target: 'lock' | 'semaphore', name: string, sid: string, from: number, to: number): void {
    const hs: { sid: string; token: number }[] = target === 'lock' ? this.locks.get(name)?.holders ?? [] : this.sems.get(name)?.holders ?? [];
    const h = hs.find((x) => x.sid === sid && x.token === from);
    if (!h) throw new Error(`lock model: no ${target} grant of ${name} to ${sid} with token ${from}`);
    h.token = to;
    if (this.lastToken === from) this.lastToken = Math.max(to, this.lastToken);
  }

  /** lock_held as the lock stands: its exclusive holder, or nobody */
  private lockHeld(name: string): ApplyResult {
    const x = this.locks.get(name)?.holders.find((h) => h.mode === 'exclusive');
    if (!x) return { ok: false, code: 'lock_held' };
    const holder = { sessionId: x.sid, owner: x.owner, fencingToken: x.token };
    return x.value === undefined ? { ok: false, code: 'lock_held', holder } : { ok: false, code: 'lock_held', holder, value: x.value };
  }

  /** A wait ended: every key whose stored answer is its queued answer (of this name and
   *  session, or of this set's `since`) — the request that began it and any of the
   *  session's requests that joined it — answers its grant, or the refusal its waiting
   *  request was told. */
  private settleWait(queued: 'queued' | 'sem_queued' | 'queued_all', name: string | number, sid: string, answer: ApplyResult): void {
    for (const e of this.idem) {
      const r = e.result;
      if (!r.ok || r.kind !== queued || !('sessionId' in r) || r.sessionId !== sid) continue;
      if (queued === 'queued_all' ? !('since' in r) || r.since !== name : !('name' in r) || r.name !== name) continue;
      e.result = answer;
    }
  }

  /** a single lock wait leaves its queue without a grant (the caller serves the queue) */
  private endLockWait(name: string, w: MWait, reason: 'cancelled' | 'session_ended'): void {
    const l = this.locks.get(name)!;
    l.queue.splice(l.queue.indexOf(w), 1);
    this.settleWait('queued', name, w.sid, reason === 'session_ended' ? { ok: false, code: 'session_not_found' } : this.lockHeld(name));
  }

  /** the session a new session would get refused for, or null */
  private refuseNewSession(sid: string): ApplyResult | null {
    if (this.sessions.has(sid)) return { ok: false, code: 'session_exists' };
    if (this.lim.maxSessions !== undefined && this.sessions.size >= this.lim.maxSessions) return { ok: false, code: 'too_many_requests', limit: 'sessions' };
    return null;
  }

  private acquirer(cmd: { sessionId: string; owner?: string; newSession?: { ttlMs: number; owner: string; lockDelayMs: number } }, ev: FsmEvent[]): Acquirer {
    const ns = cmd.newSession;
    const sid = cmd.sessionId;
    if (ns) {
      const refused = this.refuseNewSession(sid);
      if (refused) return { refused };
      const open = (): MSession => {
        const s = { ttlMs: ns.ttlMs, owner: ns.owner, lockDelayMs: ns.lockDelayMs };
        this.sessions.set(sid, s);
        ev.push({ type: 'sessionOpened', sessionId: sid, ttlMs: ns.ttlMs });
        return s;
      };
      return { s: null, sid, owner: cmd.owner ?? ns.owner, open };
    }
    const s = this.sessions.get(sid);
    if (!s) return { refused: { ok: false, code: 'session_not_found' } };
    return { s, sid, owner: cmd.owner ?? s.owner, open: () => s };
  }

  private run(index: number, cmd: Command, ev: FsmEvent[]): ApplyResult {
    switch (cmd.kind) {
      case 'openSession': {
        const refused = this.refuseNewSession(cmd.sessionId);
        if (refused) return refused;
        this.sessions.set(cmd.sessionId, { ttlMs: cmd.ttlMs, owner: cmd.owner, lockDelayMs: cmd.lockDelayMs });
        ev.push({ type: 'sessionOpened', sessionId: cmd.sessionId, ttlMs: cmd.ttlMs });
        return { ok: true, kind: 'session_opened', sessionId: cmd.sessionId, ttlMs: cmd.ttlMs };
      }
      case 'closeSession': return this.end(index, cmd.sessionId, 'closed', ev);
      case 'expireSession': return this.end(index, cmd.sessionId, 'expired', ev);
      case 'acquire': return this.acquire(index, cmd, ev);
      case 'campaign': {
        const { value, ...rest } = cmd;
        return this.acquire(index, { ...rest, kind: 'acquire' }, ev, value);
      }
      case 'proclaim': {
        if (!this.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_not_found' };
        const h = this.locks.get(cmd.name)?.holders.find((x) => x.sid === cmd.sessionId);
        if (!h || h.value === undefined) return { ok: false, code: 'not_holder' };
        h.value = cmd.value;
        ev.push({ type: 'proclaimed', name: cmd.name, sessionId: cmd.sessionId, fencingToken: h.token, value: cmd.value });
        return { ok: true, kind: 'proclaimed', name: cmd.name, value: cmd.value };
      }
      case 'resign': {
        if (!this.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_not_found' };
        const l = this.locks.get(cmd.name);
        const h = l?.holders.find((x) => x.sid === cmd.sessionId);
        if (l && h && h.value !== undefined) {
          ev.push({ type: 'resigned', name: cmd.name, sessionId: cmd.sessionId, fencingToken: h.token });
          l.holders.splice(l.holders.indexOf(h), 1);
          this.pump(index, cmd.name, ev);
          return { ok: true, kind: 'resigned', name: cmd.name, wasLeader: true };
        }
        const i = l ? l.queue.findIndex((w) => w.sid === cmd.sessionId && w.value !== undefined) : -1;
        if (l && i >= 0) {
          this.endLockWait(cmd.name, l.queue[i] as MWait, 'cancelled');
          ev.push({ type: 'waitEnded', name: cmd.name, sessionId: cmd.sessionId, reason: 'cancelled' });
          this.pump(index, cmd.name, ev);
          return { ok: true, kind: 'resigned', name: cmd.name, wasLeader: false };
        }
        return { ok: false, code: 'not_holder' };
      }
      case 'release': {
        if (!this.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_not_found' };
        const l = this.locks.get(cmd.name);
        const h = l?.holders.find((x) => x.sid === cmd.sessionId);
        if (!l || !h || (cmd.fencingToken !== undefined && cmd.fencingToken !== h.token)) return { ok: false, code: 'not_holder' };
        ev.push(grantEnded(cmd.name, cmd.sessionId, h, 'released'));
        l.holders.splice(l.holders.indexOf(h), 1);
        this.withdraw(index, cmd.sessionId, cmd.name, ev);
        this.pump(index, cmd.name, ev);
        return { ok: true, kind: 'released', name: cmd.name };
      }
      case 'cancelWait': {
        const s = this.sessions.get(cmd.sessionId);
        if (!s) return { ok: false, code: 'session_not_found' };
        const l = this.locks.get(cmd.name);
        const i = l ? l.queue.findIndex((w) => w.sid === cmd.sessionId && (cmd.since === undefined || w.since === cmd.since)) : -1;
        if (l && i >= 0) {
          const w = l.queue[i] as MWait;
          // a set waits as one request: a cancel naming any of its places ends it whole
          if (w.setSince !== undefined) this.cancelSet(index, this.setOf(w.sid, w.setSince), 'cancelled', ev);
          else {
            this.endLockWait(cmd.name, w, 'cancelled');
            ev.push({ type: 'waitEnded', name: cmd.name, sessionId: cmd.sessionId, reason: 'cancelled' });
            this.pump(index, cmd.name, ev);
          }
          return { ok: true, kind: 'wait_cancelled', name: cmd.name, sessionId: cmd.sessionId };
        }
        const h = l?.holders.find((x) => x.sid === cmd.sessionId);
        if (h) return this.acquired(cmd.name, h, s);
        return { ok: true, kind: 'noop' };
      }
      case 'endLockDelay': {
        const l = this.locks.get(cmd.name);
        if (l && l.delayMs > 0 && (cmd.since === undefined || l.delaySince === cmd.since)) {
          l.delayMs = 0;
          l.delaySince = 0;
          ev.push({ type: 'lockDelayEnded', name: cmd.name });
          this.pump(index, cmd.name, ev);
        }
        return { ok: true, kind: 'noop' };
      }
      case 'barrier': return { ok: true, kind: 'noop' };
      case 'revoke': return this.revoke(index, cmd, ev);
      case 'expireHold': return this.expireHold(index, cmd, ev);
      case 'semAcquire': return this.semAcquire(index, cmd, ev);
      case 'semRelease': {
        if (!this.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_not_found' };
        const sem = this.sems.get(cmd.name);
        const h = sem?.holders.find((x) => x.sid === cmd.sessionId);
        if (!sem || !h) return { ok: false, code: 'not_holder' };
        ev.push({ type: 'semReleased', name: cmd.name, sessionId: cmd.sessionId, fencingToken: h.token, permits: h.permits, reason: 'released' });
        sem.holders.splice(sem.holders.indexOf(h), 1);
        this.semPump(index, cmd.name, ev);
        return { ok: true, kind: 'sem_released', name: cmd.name };
      }
      case 'semSetLimit': {
        const sem = this.sems.get(cmd.name);
        if (sem) {
          if (sem.limit !== cmd.limit) ev.push({ type: 'semLimit', name: cmd.name, limit: cmd.limit });
          sem.limit = cmd.limit;
          this.semPump(index, cmd.name, ev);
        }
        return { ok: true, kind: 'sem_limit', name: cmd.name, limit: cmd.limit };
      }
      case 'semCancelWait': {
        const s = this.sessions.get(cmd.sessionId);
        if (!s) return { ok: false, code: 'session_not_found' };
        const sem = this.sems.get(cmd.name);
        const i = sem ? sem.queue.findIndex((w) => w.sid === cmd.sessionId && w.since === cmd.since) : -1;
        if (sem && i >= 0) {
          const [w] = sem.queue.splice(i, 1) as [MSemWait];
          this.settleWait('sem_queued', cmd.name, w.sid, { ok: false, code: 'semaphore_full', inUse: used(sem), limit: sem.limit });
          ev.push({ type: 'semWaitEnded', name: cmd.name, sessionId: cmd.sessionId, reason: 'cancelled' });
          this.semPump(index, cmd.name, ev);
          return { ok: true, kind: 'wait_cancelled', name: cmd.name, sessionId: cmd.sessionId };
        }
        const h = sem?.holders.find((x) => x.sid === cmd.sessionId);
        if (sem && h) return this.semAcquired(cmd.name, sem, h);
        return { ok: true, kind: 'noop' };
      }
      case 'acquireAll': return this.acquireAll(index, cmd, ev);
      case 'releaseAll': return this.releaseAll(index, cmd, ev);
    }
  }

  private acquired(name: string, h: MHolder, s: MSession): ApplyResult {
    const r: ApplyResult = { ok: true, kind: 'acquired', name, sessionId: h.sid, fencingToken: h.token, ttlMs: s.ttlMs };
    if (h.mode === 'shared') r.mode = 'shared';
    if (h.value !== undefined) r.value = h.value;
    return r;
  }

  private semAcquired(name: string, sem: MSem, h: MSemHolder): ApplyResult {
    return { ok: true, kind: 'sem_acquired', name, sessionId: h.sid, permits: h.permits, limit: sem.limit, fencingToken: h.token, ttlMs: this.sessions.get(h.sid)!.ttlMs };
  }

  private grant(index: number, name: string, sid: string, owner: string, mode: Mode, ev: FsmEvent[], maxHoldMs: number, value?: string): MHolder {
    const l = this.locks.get(name) ?? { holders: [], queue: [], delayMs: 0, delaySince: 0 };
    this.locks.set(name, l);
    const h: MHolder = { sid, owner, token: this.token(index), mode, maxHoldMs, at: maxHoldMs > 0 ? this.nowMs : 0, ...(value !== undefined ? { value } : {}) };
    l.holders.push(h);
    const e: FsmEvent = { type: 'granted', name, sessionId: sid, fencingToken: h.token };
    if (mode === 'shared') e.mode = 'shared';
    if (maxHoldMs > 0) e.maxHoldMs = maxHoldMs;
    if (value !== undefined) e.value = value;
    ev.push(e);
    return h;
  }

  /** the grants of a name, sorted by session id */
  private grantsOf(target: 'lock' | 'semaphore', name: string): (MHolder | MSemHolder)[] {
    const hs = target === 'lock' ? this.locks.get(name)?.holders ?? [] : this.sems.get(name)?.holders ?? [];
    return [...hs].sort((a, b) => cmp(a.sid, b.sid));
  }

  /** a grant is gone: a lock's enters lock-delay when delayMs > 0, else the queue moves */
  private drop(index: number, target: 'lock' | 'semaphore', name: string, sid: string, delayMs: number, ev: FsmEvent[]): void {
    if (target === 'semaphore') {
      const sem = this.sems.get(name)!;
      sem.holders = sem.holders.filter((h) => h.sid !== sid);
      this.semPump(index, name, ev);
      return;
    }
    const l = this.locks.get(name)!;
    l.holders = l.holders.filter((h) => h.sid !== sid);
    // the delay first: withdrawing the session's sets serves other queues, and a set granted
    // there must not take this lock in the instant before its delay (sim-lock seed 181)
    if (delayMs > 0) {
      l.delayMs = l.delayMs > 0 ? Math.max(l.delayMs, delayMs) : delayMs;
      l.delaySince = index;
      ev.push({ type: 'lockDelayStarted', name, delayMs: l.delayMs, since: index });
    }
    this.withdraw(index, sid, name, ev);
    if (delayMs === 0) this.pump(index, name, ev);
  }

  private revoke(index: number, cmd: Extract<Command, { kind: 'revoke' }>, ev: FsmEvent[]): ApplyResult {
    let gs = this.grantsOf(cmd.target, cmd.name);
    if (cmd.sessionId !== undefined) {
      if (!this.sessions.has(cmd.sessionId)) return { ok: false, code: 'session_not_found' };
      gs = gs.filter((g) => g.sid === cmd.sessionId);
      if (gs.length === 0) return { ok: false, code: 'not_holder' };
    }
    for (const g of gs) {
      const e: FsmEvent = { type: 'revoked', kind: cmd.target, name: cmd.name, sessionId: g.sid, fencingToken: g.token };
      if ('mode' in g && g.mode === 'shared') e.mode = 'shared';
      else if ('value' in g && g.value !== undefined) e.election = true;
      ev.push(e);
      this.drop(index, cmd.target, cmd.name, g.sid, 0, ev);
    }
    return { ok: true, kind: 'revoked', target: cmd.target, name: cmd.name, revoked: gs.map((g) => ({ sessionId: g.sid, fencingToken: g.token })) };
  }

  private expireHold(index: number, cmd: Extract<Command, { kind: 'expireHold' }>, ev: FsmEvent[]): ApplyResult {
    const g = this.grantsOf(cmd.target, cmd.name).find((x) => x.sid === cmd.sessionId);
    if (!g || g.token !== cmd.fencingToken || g.maxHoldMs === 0) return { ok: true, kind: 'noop' };
    const e: FsmEvent = { type: 'grantExpired', kind: cmd.target, name: cmd.name, sessionId: g.sid, fencingToken: g.token, reason: 'max_hold' };
    if ('mode' in g && g.mode === 'shared') e.mode = 'shared';
    else if ('value' in g && g.value !== undefined) e.election = true;
    ev.push(e);
    this.drop(index, cmd.target, cmd.name, g.sid, cmd.target === 'lock' ? this.sessions.get(g.sid)!.lockDelayMs : 0, ev);
    return { ok: true, kind: 'noop' };
  }

  /** every grant with a max hold, in LockFsm.grantsWithMaxHold's order */
  holdsView(): HoldInfo[] {
    const out: HoldInfo[] = [];
    for (const name of [...this.locks.keys()].sort(cmp)) {
      for (const h of this.grantsOf('lock', name)) if (h.maxHoldMs > 0) out.push({ target: 'lock', name, sessionId: h.sid, fencingToken: h.token, maxHoldMs: h.maxHoldMs, grantedAtMs: h.at });
    }
    for (const name of [...this.sems.keys()].sort(cmp)) {
      for (const h of this.grantsOf('semaphore', name)) if (h.maxHoldMs > 0) out.push({ target: 'semaphore', name, sessionId: h.sid, fencingToken: h.token, maxHoldMs: h.maxHoldMs, grantedAtMs: h.at });
    }
    return out;
  }

  /** value: a campaign (an exclusive acquire whose grant leads the election) */
  private acquire(index: number, cmd: Extract<Command, { kind: 'acquire' }>, ev: FsmEvent[], value?: string): ApplyResult {
    const who = this.acquirer(cmd, ev);
    if ('refused' in who) return who.refused;
    const { s, owner, sid } = who;
    const mode: Mode = cmd.mode === 'shared' ? 'shared' : 'exclusive';
    const l = this.locks.get(cmd.name);
    const mine = s === null ? undefined : l?.holders.find((h) => h.sid === sid);
    const held = (): ApplyResult => this.lockHeld(cmd.name);
    if (value !== undefined && mine) {
      // a campaign by the leader answers its leadership; by a plain or shared holder: refused
      if (mine.mode === 'exclusive' && mine.value !== undefined) return this.acquired(cmd.name, mine, s!);
      return held();
    }
    // an exclusive holder's grant answers any request; a share is never upgraded
    if (mine && (mine.mode === 'exclusive' || mode === 'shared')) {
      const r = this.acquired(cmd.name, mine, s!);
      if (r.ok && r.kind === 'acquired') delete r.value; // a plain acquire by the leader: a plain answer
      return r;
    }
    if (mine) return held();
    const free = !l || (l.delayMs === 0 && l.queue.length === 0 && l.holders.every((h) => mode === 'shared' && h.mode === 'shared'));
    if (free) {
      const session = who.open();
      return this.acquired(cmd.name, this.grant(index, cmd.name, sid, owner, mode, ev, cmd.maxHoldMs ?? 0, value), session);
    }
    if (cmd.waitMs === 0) return held();
    const pos = s === null ? -1 : l.queue.findIndex((w) => w.sid === sid);
    if (pos >= 0) {
      // joins the session's wait only if its grant would answer this request, as a grant held would
      const w = l.queue[pos]!;
      if (w.mode === 'shared' ? mode !== 'shared' || value !== undefined : value !== undefined && w.value === undefined) return held();
      return { ok: true, kind: 'queued', name: cmd.name, sessionId: sid, position: pos + 1 };
    }
    if (l.queue.length >= this.lim.maxWaitersPerLock) return { ok: false, code: 'too_many_requests', limit: 'waiters' };
    // docs/lock-fsm.md "Deadlock detection": a wait that closes a cycle is refused (a session
    // the acquire itself opens waits for nothing yet, so it closes none)
    const cycle = s === null ? null : modelCycle(sid, [{ name: cmd.name, kind: 'lock', blockers: this.lockBlockers(l, mode, l.queue.length) }], (t) => this.waitsOf(t));
    if (cycle !== null) return { ok: false, code: 'deadlock', cycle };
    who.open();
    l.queue.push({ sid, owner, mode, since: index, waitMs: cmd.waitMs, ...(this.key !== undefined ? { key: this.key } : {}), maxHoldMs: cmd.maxHoldMs ?? 0, ...(value !== undefined ? { value } : {}), queuedAtMs: this.nowMs });
    ev.push(mode === 'shared' ? { type: 'waiting', name: cmd.name, sessionId: sid, mode: 'shared' } : { type: 'waiting', name: cmd.name, sessionId: sid });
    return { ok: true, kind: 'queued', name: cmd.name, sessionId: sid, position: l.queue.length };
  }

  /** serve the head while the lock allows it: one writer, or every reader at the head, or a
   *  lock set whose every place is at the head of a queue it can be granted from; a set's
   *  grant moves its other names' queues too, served after this one from a work list
   *  (docs/lock-fsm.md "Lock sets") */
  private pump(index: number, name: string, ev: FsmEvent[]): void {
    const work: string[] = [];
    this.pumpOne(index, name, ev, work);
    for (let i = 0; i < work.length; i++) this.pumpOne(index, work[i] as string, ev, work);
  }

  private pumpOne(index: number, name: string, ev: FsmEvent[], work: string[]): void {
    const l = this.locks.get(name);
    if (!l) return;
    while (l.delayMs === 0 && l.queue.length > 0 && !l.holders.some((h) => h.mode === 'exclusive')) {
      const w = l.queue[0]!;
      if (w.setSince !== undefined) {
        const set = this.setOf(w.sid, w.setSince);
        if (!this.setReady(set)) break;
        this.grantSet(index, set, ev, work);
        continue;
      }
      if (w.mode === 'exclusive' && l.holders.length > 0) break;
      l.queue.shift();
      const h = this.grant(index, name, w.sid, w.owner, w.mode, ev, w.maxHoldMs, w.value);
      this.settleWait('queued', name, w.sid, this.acquired(name, h, this.sessions.get(w.sid)!));
      if (w.mode === 'exclusive') break;
    }
    if (l.holders.length === 0 && l.delayMs === 0 && l.queue.length === 0) this.locks.delete(name);
  }

  private semAcquire(index: number, cmd: Extract<Command, { kind: 'semAcquire' }>, ev: FsmEvent[]): ApplyResult {
    const who = this.acquirer(cmd, ev);
    if ('refused' in who) return who.refused;
    const { s, owner } = who;
    const sem = this.sems.get(cmd.name);
    const mine = s === null ? undefined : sem?.holders.find((h) => h.sid === cmd.sessionId);
    if (sem && mine) return this.semAcquired(cmd.name, sem, mine);
    if (sem && sem.limit !== cmd.limit) return { ok: false, code: 'limit_mismatch', limit: sem.limit };
    const pos = sem && s !== null ? sem.queue.findIndex((w) => w.sid === cmd.sessionId) : -1;
    if (pos >= 0) return { ok: true, kind: 'sem_queued', name: cmd.name, sessionId: cmd.sessionId, position: pos + 1 };
    const inUse = sem ? used(sem) : 0;
    if (cmd.permits > cmd.limit) return { ok: false, code: 'semaphore_full', inUse, limit: cmd.limit };
    if (!sem || (sem.queue.length === 0 && inUse + cmd.permits <= sem.limit)) {
      const st = sem ?? { limit: cmd.limit, holders: [], queue: [] };
      who.open();
      this.sems.set(cmd.name, st);
      return this.semAcquired(cmd.name, st, this.semGrant(index, cmd.name, st, cmd.sessionId, owner, cmd.permits, ev, cmd.maxHoldMs ?? 0));
    }
    if (cmd.waitMs === 0) return { ok: false, code: 'semaphore_full', inUse, limit: sem.limit };
    if (sem.queue.length >= this.lim.maxWaitersPerLock) return { ok: false, code: 'too_many_requests', limit: 'waiters' };
    const cycle = s === null ? null : modelCycle(cmd.sessionId, [{ name: cmd.name, kind: 'semaphore', blockers: this.semBlockers(sem, sem.queue.length) }], (t) => this.waitsOf(t));
    if (cycle !== null) return { ok: false, code: 'deadlock', cycle };
    who.open();
    sem.queue.push({ sid: cmd.sessionId, owner, permits: cmd.permits, since: index, waitMs: cmd.waitMs, ...(this.key !== undefined ? { key: this.key } : {}), maxHoldMs: cmd.maxHoldMs ?? 0, queuedAtMs: this.nowMs });
    ev.push({ type: 'semWaiting', name: cmd.name, sessionId: cmd.sessionId, permits: cmd.permits });
    return { ok: true, kind: 'sem_queued', name: cmd.name, sessionId: cmd.sessionId, position: sem.queue.length };
  }

  /** whom a request of this mode at queue position i of l waits for (the wait-for graph,
   *  docs/lock-fsm.md "Deadlock detection") */
  private lockBlockers(l: MLock, mode: Mode, i: number): string[] {
    const out: string[] = [];
    for (const h of l.holders) if (h.mode === 'exclusive') out.push(h.sid);
    if (mode === 'exclusive') for (const h of [...l.holders].sort((a, b) => a.token - b.token)) if (h.mode === 'shared') out.push(h.sid);
    for (let j = i - 1; j >= 0; j--) {
      const w = l.queue[j] as MWait;
      if (mode === 'exclusive' || w.mode === 'exclusive') out.push(w.sid);
    }
    return out;
  }

  private semBlockers(sem: MSem, i: number): string[] {
    const out = [...sem.holders].sort((a, b) => a.token - b.token).map((h) => h.sid);
    for (let j = i - 1; j >= 0; j--) out.push((sem.queue[j] as MSemWait).sid);
    return out;
  }

  /** a session's waits: on locks by name, then on semaphores by name */
  private waitsOf(sid: string): ModelWait[] {
    const out: ModelWait[] = [];
    for (const name of [...this.locks.keys()].sort(cmp)) {
      const l = this.locks.get(name) as MLock;
      const i = l.queue.findIndex((w) => w.sid === sid);
      if (i >= 0) out.push({ name, kind: 'lock', blockers: this.lockBlockers(l, (l.queue[i] as MWait).mode, i) });
    }
    for (const name of [...this.sems.keys()].sort(cmp)) {
      const sem = this.sems.get(name) as MSem;
      const i = sem.queue.findIndex((w) => w.sid === sid);
      if (i >= 0) out.push({ name, kind: 'semaphore', blockers: this.semBlockers(sem, i) });
    }
    return out;
  }

  private semGrant(index: number, name: string, sem: MSem, sid: string, owner: string, permits: number, ev: FsmEvent[], maxHoldMs: number): MSemHolder {
    const h = { sid, owner, permits, token: this.token(index), maxHoldMs, at: maxHoldMs > 0 ? this.nowMs : 0 };
    sem.holders.push(h);
    const e: FsmEvent = { type: 'semGranted', name, sessionId: sid, fencingToken: h.token, permits, limit: sem.limit };
    if (maxHoldMs > 0) e.maxHoldMs = maxHoldMs;
    ev.push(e);
    return h;
  }

  /** strict FIFO: grant from the head while it fits */
  private semPump(index: number, name: string, ev: FsmEvent[]): void {
    const sem = this.sems.get(name)!;
    while (sem.queue.length > 0 && used(sem) + sem.queue[0]!.permits <= sem.limit) {
      const w = sem.queue.shift()!;
      const h = this.semGrant(index, name, sem, w.sid, w.owner, w.permits, ev, w.maxHoldMs);
      this.settleWait('sem_queued', name, w.sid, this.semAcquired(name, sem, h));
    }
    if (sem.holders.length === 0 && sem.queue.length === 0) this.sems.delete(name);
  }

  private end(index: number, id: string, reason: 'closed' | 'expired', ev: FsmEvent[]): ApplyResult {
    const s = this.sessions.get(id);
    if (!s) return reason === 'expired' ? { ok: true, kind: 'noop' } : { ok: false, code: 'session_not_found' };
    if (this.sets.length > 0) {
      // while any set waits, every wait leaves its queue before any queue is served
      for (const set of this.sets) if (set.sid === id) this.settleWait('queued_all', set.since, id, { ok: false, code: 'session_not_found' });
      this.sets = this.sets.filter((x) => x.sid !== id);
      const names = [...this.locks.keys()].sort(cmp).filter((n) => this.locks.get(n)!.queue.some((w) => w.sid === id));
      for (const name of names) {
        const l = this.locks.get(name)!;
        // a set's place too: a single acquire of the name by the session joined it
        if (l.queue.some((w) => w.sid === id)) this.settleWait('queued', name, id, { ok: false, code: 'session_not_found' });
        l.queue = l.queue.filter((w) => w.sid !== id);
        ev.push({ type: 'waitEnded', name, sessionId: id, reason: 'session_ended' });
      }
      for (const name of names) this.pump(index, name, ev);
    }
    for (const name of [...this.locks.keys()].sort(cmp)) {
      const l = this.locks.get(name)!;
      const i = l.queue.findIndex((w) => w.sid === id);
      if (i < 0) continue;
      this.endLockWait(name, l.queue[i] as MWait, 'session_ended');
      ev.push({ type: 'waitEnded', name, sessionId: id, reason: 'session_ended' });
      this.pump(index, name, ev);
    }
    const released = [...this.locks.entries()].filter(([, l]) => l.holders.some((h) => h.sid === id)).map(([n]) => n).sort(cmp);
    for (const name of released) {
      const l = this.locks.get(name)!;
      ev.push(grantEnded(name, id, l.holders.find((h) => h.sid === id)!, reason));
      l.holders = l.holders.filter((h) => h.sid !== id);
      if (reason === 'expired' && s.lockDelayMs > 0) {
        l.delayMs = l.delayMs > 0 ? Math.max(l.delayMs, s.lockDelayMs) : s.lockDelayMs;
        l.delaySince = index;
        ev.push({ type: 'lockDelayStarted', name, delayMs: l.delayMs, since: index });
      } else this.pump(index, name, ev);
    }
    for (const name of [...this.sems.keys()].sort(cmp)) {
      const sem = this.sems.get(name)!;
      const i = sem.queue.findIndex((w) => w.sid === id);
      if (i < 0) continue;
      sem.queue.splice(i, 1);
      this.settleWait('sem_queued', name, id, { ok: false, code: 'session_not_found' });
      ev.push({ type: 'semWaitEnded', name, sessionId: id, reason: 'session_ended' });
      this.semPump(index, name, ev);
    }
    for (const name of [...this.sems.keys()].sort(cmp)) {
      const sem = this.sems.get(name)!;
      const h = sem.holders.find((x) => x.sid === id);
      if (!h) continue;
      ev.push({ type: 'semReleased', name, sessionId: id, fencingToken: h.token, permits: h.permits, reason });
      sem.holders = sem.holders.filter((h) => h.sid !== id);
      this.semPump(index, name, ev);
    }
    this.sessions.delete(id);
    ev.push({ type: 'sessionEnded', sessionId: id, reason, released });
    return { ok: true, kind: 'session_closed', sessionId: id, released };
  }

  // ---- lock sets (docs/lock-fsm.md "Lock sets") ----

  private setOf(sid: string, since: number): MSet {
    const set = this.sets.find((x) => x.sid === sid && x.since === since);
    if (!set) throw new Error(`lock model: no set of ${sid} at ${since}`);
    return set;
  }

  /** a set's places, in the request's order: [name, its MWait] */
  private placesOf(set: MSet): [string, MWait][] {
    const out: [string, MWait][] = [];
    for (const name of set.names) {
      const w = this.locks.get(name)?.queue.find((x) => x.sid === set.sid && x.setSince === set.since);
      if (w) out.push([name, w]);
    }
    return out;
  }

  /** every place at the head of its queue, every lock free for the set's mode */
  private setReady(set: MSet): boolean {
    return this.placesOf(set).every(([name, w]) => {
      const l = this.locks.get(name)!;
      return l.queue[0] === w && l.delayMs === 0 && l.holders.every((h) => set.mode === 'shared' && h.mode === 'shared');
    });
  }

  /** the session's current token of a name it holds in either mode */
  private heldToken(sid: string, name: string): number {
    const h = this.locks.get(name)?.holders.find((x) => x.sid === sid);
    if (!h) throw new Error(`lock model: set of ${sid} counts on ${name}, which it does not hold`);
    return h.token;
  }

  private acquiredAll(sid: string, names: readonly string[], tokens: Map<string, number>, mode: Mode): Extract<ApplyResult, { kind: 'acquired_all' }> {
    const grants = names.map((name) => ({ name, fencingToken: tokens.get(name) ?? this.heldToken(sid, name) }));
    const ttlMs = this.sessions.get(sid)!.ttlMs;
    return mode === 'shared' ? { ok: true, kind: 'acquired_all', sessionId: sid, ttlMs, grants, mode: 'shared' } : { ok: true, kind: 'acquired_all', sessionId: sid, ttlMs, grants };
  }

  /** grants every place of a ready set, in name order (consecutive tokens) */
  private grantSet(index: number, set: MSet, ev: FsmEvent[], work: string[]): void {
    this.sets.splice(this.sets.indexOf(set), 1);
    const places = this.placesOf(set).sort((a, b) => cmp(a[0], b[0]));
    for (const [name, w] of places) {
      const l = this.locks.get(name)!;
      l.queue.splice(l.queue.indexOf(w), 1);
    }
    const tokens = new Map<string, number>();
    const grants: [string, MHolder][] = [];
    for (const [name, w] of places) {
      const h = this.grant(index, name, set.sid, w.owner, set.mode, ev, w.maxHoldMs);
      tokens.set(name, h.token);
      grants.push([name, h]);
      work.push(name);
    }
    const r = this.acquiredAll(set.sid, set.names, tokens, set.mode);
    this.settleWait('queued_all', set.since, set.sid, r);
    // a single acquire of one of the names by the session joined that place: its grant
    const session = this.sessions.get(set.sid)!;
    for (const [name, h] of grants) this.settleWait('queued', name, set.sid, this.acquired(name, h, session));
    ev.push(set.mode === 'shared' ? { type: 'setGranted', sessionId: set.sid, since: set.since, grants: r.grants, mode: 'shared' } : { type: 'setGranted', sessionId: set.sid, since: set.since, grants: r.grants });
  }

  /** ends a waiting set: every place leaves its queue (by name), then each queue is served */
  private cancelSet(index: number, set: MSet, reason: 'cancelled' | 'session_ended', ev: FsmEvent[]): void {
    this.endWaits(index, set.sid, [set], reason, ev);
  }

  /** ends these waits of one session (whole sets, or the single wait on a name), in the
   *  order given, before serving any queue; then serves each queue in the same order */
  private endWaits(index: number, sid: string, ends: readonly (MSet | string)[], reason: 'cancelled' | 'session_ended', ev: FsmEvent[]): void {
    const served: string[] = [];
    for (const end of ends) {
      let places: [string, MWait][];
      if (typeof end === 'string') {
        const w = this.locks.get(end)!.queue.find((x) => x.sid === sid)!;
        places = [[end, w]];
      } else {
        this.sets.splice(this.sets.indexOf(end), 1);
        places = this.placesOf(end).sort((a, b) => cmp(a[0], b[0]));
        this.settleWait('queued_all', end.since, sid, reason === 'session_ended' ? { ok: false, code: 'session_not_found' } : { ok: false, code: 'lock_held', blocked: places.map(([n]) => this.blockedRow(n)) });
      }
      for (const [name, w] of places) {
        const l = this.locks.get(name)!;
        if (typeof end === 'string') this.endLockWait(name, w, reason);
        else {
          l.queue.splice(l.queue.indexOf(w), 1);
          // a single acquire of the name by the session joined this place
          this.settleWait('queued', name, sid, reason === 'session_ended' ? { ok: false, code: 'session_not_found' } : this.lockHeld(name));
        }
        ev.push({ type: 'waitEnded', name, sessionId: sid, reason });
        served.push(name);
      }
    }
    for (const name of served) this.pump(index, name, ev);
  }

  /** the session's waiting sets, in log order */
  private setsOf(sid: string): MSet[] {
    return this.sets.filter((x) => x.sid === sid).sort((a, b) => a.since - b.since);
  }

  /** the session lost its grant of `name`: a set that counted on holding it can no longer be
   *  granted whole, so its wait ends (all of them before any queue is served) */
  private withdraw(index: number, sid: string, name: string, ev: FsmEvent[]): void {
    this.endWaits(index, sid, this.setsOf(sid).filter((set) => set.held.includes(name)), 'cancelled', ev);
  }

  private blockedRow(name: string): BlockedName {
    const x = this.locks.get(name)?.holders.find((h) => h.mode === 'exclusive');
    return x ? { name, holder: { sessionId: x.sid, owner: x.owner, fencingToken: x.token } } : { name };
  }

  private acquireAll(index: number, cmd: Extract<Command, { kind: 'acquireAll' }>, ev: FsmEvent[]): ApplyResult {
    const who = this.acquirer(cmd, ev);
    if ('refused' in who) return who.refused;
    const { s, owner, sid } = who;
    const mode: Mode = cmd.mode === 'shared' ? 'shared' : 'exclusive';
    const need: string[] = [];
    const held: string[] = [];
    const upgrade: BlockedName[] = [];
    const blocked: BlockedName[] = [];
    for (const name of cmd.names) {
      const l = this.locks.get(name);
      const mine = s === null ? undefined : l?.holders.find((h) => h.sid === sid);
      // as a single re-acquire: an exclusive grant answers either mode, a share a shared set
      if (mine && (mine.mode === 'exclusive' || mode === 'shared')) { held.push(name); continue; }
      if (mine) { upgrade.push({ name }); continue; }
      need.push(name);
      const free = !l || (l.delayMs === 0 && l.queue.length === 0 && l.holders.every((h) => mode === 'shared' && h.mode === 'shared'));
      if (!free) blocked.push(this.blockedRow(name));
    }
    if (upgrade.length > 0) return { ok: false, code: 'lock_held', blocked: upgrade };
    if (blocked.length === 0) {
      who.open();
      const tokens = new Map<string, number>();
      for (const name of [...need].sort(cmp)) tokens.set(name, this.grant(index, name, sid, owner, mode, ev, cmd.maxHoldMs ?? 0).token);
      return this.acquiredAll(sid, cmd.names, tokens, mode);
    }
    if (cmd.waitMs === 0) return { ok: false, code: 'lock_held', blocked };
    if (s !== null) {
      // already waiting on some of these names: the same set again keeps its place
      const mine = need.flatMap((n) => this.locks.get(n)?.queue.filter((w) => w.sid === sid).map((w): [string, MWait] => [n, w]) ?? []);
      if (mine.length > 0) {
        const first = mine[0]![1];
        const set = first.setSince === undefined ? undefined : this.setOf(sid, first.setSince);
        const same = set !== undefined && set.mode === mode && mine.every(([, w]) => w.setSince === set.since) && set.names.length === cmd.names.length && cmd.names.every((n) => set.names.includes(n));
        if (same) return { ok: true, kind: 'queued_all', sessionId: sid, names: [...set.names], since: set.since };
        return { ok: false, code: 'lock_held', blocked: mine.map(([n]) => this.blockedRow(n)) };
      }
    }
    if (need.some((n) => (this.locks.get(n)?.queue.length ?? 0) >= this.lim.maxWaitersPerLock)) return { ok: false, code: 'too_many_requests', limit: 'waiters' };
    if (s !== null) {
      const fresh = [...need].sort(cmp).map((name): ModelWait => {
        const l = this.locks.get(name);
        return { name, kind: 'lock', blockers: l ? this.lockBlockers(l, mode, l.queue.length) : [] };
      });
      const cycle = modelCycle(sid, fresh, (t) => this.waitsOf(t));
      if (cycle !== null) return { ok: false, code: 'deadlock', cycle };
    }
    who.open();
    const set: MSet = { sid, since: index, names: [...cmd.names], held: [...held].sort(cmp), mode, ...(this.key !== undefined ? { key: this.key } : {}) };
    for (const name of need) {
      const l = this.locks.get(name) ?? { holders: [], queue: [], delayMs: 0, delaySince: 0 };
      this.locks.set(name, l);
      l.queue.push({ sid, owner, mode, since: index, waitMs: cmd.waitMs, maxHoldMs: cmd.maxHoldMs ?? 0, queuedAtMs: this.nowMs, setSince: index });
      ev.push(mode === 'shared' ? { type: 'waiting', name, sessionId: sid, mode: 'shared' } : { type: 'waiting', name, sessionId: sid });
    }
    this.sets.push(set);
    return { ok: true, kind: 'queued_all', sessionId: sid, names: [...cmd.names], since: index };
  }

  /** ends the session's waits on the names (a set as a whole), then releases each named
   *  grant in name order */
  private releaseAll(index: number, cmd: Extract<Command, { kind: 'releaseAll' }>, ev: FsmEvent[]): ApplyResult {
    const sid = cmd.sessionId;
    if (!this.sessions.has(sid)) return { ok: false, code: 'session_not_found' };
    const asked = [...new Set(cmd.names)].sort(cmp);
    // every wait that ends here ends before any queue is served (lock-sets.ts releaseAll)
    const ends: (MSet | string)[] = [];
    for (const name of asked) {
      const w = this.locks.get(name)?.queue.find((x) => x.sid === sid);
      if (!w) continue;
      const end = w.setSince !== undefined ? this.setOf(sid, w.setSince) : name;
      if (!ends.includes(end)) ends.push(end);
    }
    for (const set of this.setsOf(sid)) if (!ends.includes(set) && set.held.some((n) => asked.includes(n))) ends.push(set);
    this.endWaits(index, sid, ends, 'cancelled', ev);
    const released = new Set<string>();
    for (const name of asked) {
      const l = this.locks.get(name);
      const h = l?.holders.find((x) => x.sid === sid);
      if (!l || !h) continue;
      ev.push(grantEnded(name, sid, h, 'released'));
      l.holders.splice(l.holders.indexOf(h), 1);
      this.withdraw(index, sid, name, ev);
      this.pump(index, name, ev);
      released.add(name);
    }
    return { ok: true, kind: 'released_all', released: cmd.names.filter((n) => released.has(n)) };
  }

  // ---- views, in the shapes of LockFsm's queries ----

  lockView(name: string): LockInfo {
    const l = this.locks.get(name);
    if (!l) return { name, held: false, waiters: 0, inDelay: false };
    const base = { name, waiters: l.queue.length, inDelay: l.delayMs > 0 };
    if (l.holders.length === 0) return { ...base, held: false };
    const holders = [...l.holders].sort((a, b) => a.token - b.token).map((h) => ({ sessionId: h.sid, owner: h.owner, fencingToken: h.token, mode: h.mode }));
    const x = l.holders.find((h) => h.mode === 'exclusive');
    if (x) return { ...base, held: true, holder: { sessionId: x.sid, owner: x.owner, fencingToken: x.token }, mode: 'exclusive', holders };
    return { ...base, held: true, mode: 'shared', holders };
  }

  electionView(name: string): ElectionInfo {
    const l = this.locks.get(name);
    const x = l?.holders.find((h) => h.mode === 'exclusive' && h.value !== undefined);
    return { name, leader: x ? { sessionId: x.sid, owner: x.owner, value: x.value!, fencingToken: x.token } : null, waiters: l?.queue.length ?? 0 };
  }

  queueView(name: string): LockWaiterInfo[] {
    return (this.locks.get(name)?.queue ?? []).map((w, i) => ({ sessionId: w.sid, owner: w.owner, mode: w.mode, position: i + 1 }));
  }

  semView(name: string): SemaphoreInfo {
    const sem = this.sems.get(name);
    if (!sem) return { name, limit: 0, inUse: 0, holders: [], waiters: [] };
    return {
      name, limit: sem.limit, inUse: used(sem),
      holders: [...sem.holders].sort((a, b) => a.token - b.token).map((h) => ({ sessionId: h.sid, owner: h.owner, permits: h.permits, fencingToken: h.token })),
      waiters: sem.queue.map((w, i) => ({ sessionId: w.sid, owner: w.owner, permits: w.permits, position: i + 1 })),
    };
  }

  /** the state in snapshot form (docs/lock-fsm.md "Snapshot"), for comparison with exportState */
  export(): StateV1 {
    const sessions = [...this.sessions.entries()].sort((a, b) => cmp(a[0], b[0])).map(([id, x]): SessionTuple => [id, x.ttlMs, x.owner, x.lockDelayMs]);
    const names = [...this.locks.keys()].sort(cmp);
    const locks = names.map((name): LockTuple => {
      const l = this.locks.get(name)!;
      const waiters = l.queue.map((w): WaiterTuple => (w.mode === 'shared' ? [w.sid, w.owner, w.waitMs, w.since, w.key ?? null, 'shared'] : w.key === undefined ? [w.sid, w.owner, w.waitMs, w.since] : [w.sid, w.owner, w.waitMs, w.since, w.key]));
      const shares = l.holders.filter((h) => h.mode === 'shared').map((h): ShareTuple => [h.sid, h.owner, h.token]).sort((a, b) => cmp(a[0], b[0]));
      const x = l.holders.find((h) => h.mode === 'exclusive');
      return x ? [name, x.sid, x.owner, x.token, 0, waiters, 0, shares] : [name, null, null, 0, l.delayMs, waiters, l.delaySince, shares];
    });
    const sems = [...this.sems.keys()].sort(cmp).map((name): SemTuple => {
      const sem = this.sems.get(name)!;
      const holders = sem.holders.map((h): [string, string, number, number] => [h.sid, h.owner, h.permits, h.token]).sort((a, b) => cmp(a[0], b[0]));
      return [name, sem.limit, holders, sem.queue.map((w): [string, string, number, number, number, string | null] => [w.sid, w.owner, w.permits, w.waitMs, w.since, w.key ?? null])];
    });
    const elections: ElectionTuple[] = [];
    for (const name of names) {
      const l = this.locks.get(name)!;
      const leader = l.holders.find((h) => h.mode === 'exclusive' && h.value !== undefined);
      const candidates = l.queue.filter((w) => w.value !== undefined).map((w): [string, string] => [w.sid, w.value!]);
      if (leader || candidates.length > 0) elections.push([name, leader?.value ?? null, candidates]);
    }
    const bySection = (a: readonly [string, string, string, ...unknown[]], b: readonly [string, string, string, ...unknown[]]): number => cmp(a[0], b[0]) || cmp(a[1], b[1]) || cmp(a[2], b[2]);
    const grants = this.holdsView().map((h): HoldTuple => [h.target, h.name, h.sessionId, h.maxHoldMs, h.grantedAtMs]).sort(bySection);
    const waits: HoldWaitTuple[] = [];
    for (const name of names) for (const w of this.locks.get(name)!.queue) if (w.maxHoldMs > 0) waits.push(['lock', name, w.sid, w.maxHoldMs]);
    for (const [name, sem] of this.sems) for (const w of sem.queue) if (w.maxHoldMs > 0) waits.push(['semaphore', name, w.sid, w.maxHoldMs]);
    waits.sort(bySection);
    const idem = { nowMs: this.nowMs, entries: this.idem.map((e): IdemTuple => [e.key, e.atMs, e.result, bindingTuple(e.binding)]) };
    // version 5: when each wait was queued, in log time; the section only when some request waits
    const waitTimes: WaitTimeTuple[] = [];
    for (const name of names) for (const w of this.locks.get(name)!.queue) waitTimes.push(['lock', name, w.sid, w.queuedAtMs]);
    for (const [name, sem] of this.sems) for (const w of sem.queue) waitTimes.push(['semaphore', name, w.sid, w.queuedAtMs]);
    waitTimes.sort(bySection);
    // version 6: the waiting lock sets, by (session id, since)
    const sets = [...this.sets].sort((a, b) => cmp(a.sid, b.sid) || a.since - b.since).map((x): SetTuple => [x.sid, x.since, [...x.names], x.mode === 'shared' ? 'shared' : null, x.key ?? null]);
    const base = { format: 'raftlock/lock-fsm', v: 6, lastApplied: this.lastApplied, lastToken: this.lastToken, sessions, locks, sems, elections };
    return {
      ...base,
      ...(grants.length === 0 && waits.length === 0 ? {} : { maxHold: { grants, waits } }),
      ...(waitTimes.length > 0 ? { waitTimes } : {}),
      ...(sets.length > 0 ? { sets } : {}),
      idem,
    };
  }
}

function used(sem: MSem): number {
  return sem.holders.reduce((n, h) => n + h.permits, 0);
}

/** the FsmEvent of a lock grant's end */
function grantEnded(name: string, sid: string, h: MHolder, reason: 'released' | 'closed' | 'expired'): FsmEvent {
  if (h.mode === 'shared') return { type: 'released', name, sessionId: sid, fencingToken: h.token, mode: 'shared', reason };
  return h.value !== undefined ? { type: 'released', name, sessionId: sid, fencingToken: h.token, reason, election: true } : { type: 'released', name, sessionId: sid, fencingToken: h.token, reason };
}
