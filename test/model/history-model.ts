// The reference model (lock-model.ts) as a sequential specification of what clients see,
// for the Wing–Gong–Lowe search (test/checkers/history/wgl.ts): one model for every primitive —
// exclusive and shared locks, elections, semaphores with resize, revocation and max hold.
//
// A history is checked per name (P-compositionality: names share no state a client can
// observe except sessions, which each partition models itself, and the one token counter,
// which jepsen-lite's fencing checker covers). Each operation of a name's history maps to
// the model's commands, applied at the operation's linearization point:
//
// - An acquire (a lock in either mode, a campaign, semaphore permits) is one point: the
//   grant, or the refusal. A waiting acquire entered a FIFO queue at some earlier moment
//   the history does not show, so the model applies it there as if it did not wait
//   (waitMs 0): granted when free, refused when held. FIFO order is the simulators' check
//   (test/sim/lock Fifo); here a refusal that only a waiter ahead explains is allowed — a
//   shared acquire refused while only shares are held, a semaphore acquire refused with
//   room while permits are in use (a larger request may wait at the head).
// - Tokens: an answer's token is applied as the entry's index, so the model reproduces it
//   exactly when it is above every earlier token of the name; a grant no answer showed (an
//   indeterminate acquire that took effect) gets a placeholder, last + 1, which a later
//   answer naming that grant moves up (`LockModel.retoken`): the real token is at least it.
// - Sessions: a session exists from its first operation in the partition until a close or
//   its expiry; the expiry (TTL) is a synthetic operation whose window the partitioner
//   computes (history-partition.ts), as is a grant's max-hold expiry.
// - Reads compare the model's view: the exclusive holder and its token, the shares, the
//   election's leader and value, a semaphore's limit, permits in use and holders.
// - An `info` (indeterminate) operation may have taken effect or not: both states follow.
//
// Lock sets (docs/jepsen-lite.md "The model"): an acquire-all or release-all is one
// operation over several names, so the names linked by set operations form one partition
// (linearizability.ts) and the set's commands (acquireAll, releaseAll) apply to the model
// as they are: a set is granted whole or not at all, and a name held by another session
// refuses it. Within such a partition every per-name operation says which name it is on.
import type { ApplyResult, Command } from '../../src/lock-fsm/index.js';
import { LockModel } from './lock-model.js';
import type { Model } from '../checkers/history/wgl.js';

/** what kind of name a partition is */
export type NameKind = 'lock' | 'semaphore' | 'election';

/** one operation of a name's history, with sessions as partition-local ids (s0, s1, …) */
export type HistInput =
  | { f: 'acquire'; s: string; mode?: 'shared'; maxHoldMs?: number; name?: string }
  | { f: 'acquire-all'; s: string; names: string[]; maxHoldMs?: number }
  | { f: 'release-all'; s: string; names: string[] }
  | { f: 'campaign'; s: string; value: string; maxHoldMs?: number }
  | { f: 'sem-acquire'; s: string; permits: number; limit: number; maxHoldMs?: number }
  | { f: 'release'; s: string; token?: number; name?: string }
  | { f: 'sem-release'; s: string }
  | { f: 'resign'; s: string }
  | { f: 'proclaim'; s: string; value: string }
  | { f: 'renew'; s: string; name?: string }
  | { f: 'sem-limit'; limit: number }
  | { f: 'read'; name?: string }
  | { f: 'check'; token: number; name?: string }
  | { f: 'close'; s: string }
  | { f: 'expire'; s: string }
  | { f: 'revoke'; s?: string; name?: string }
  | { f: 'expire-hold'; s: string; token?: number; name?: string };

export interface Grant {
  s: string;
  token: number;
  mode?: 'exclusive' | 'shared';
  permits?: number;
}

/** what the client was answered (definite answers; `undefined` stands for info) */
export interface HistOutput {
  type: 'ok' | 'fail';
  code?: string;
  token?: number;
  /** lock_held / reads: the exclusive holder (null: none), its token */
  holder?: string | null;
  holderToken?: number;
  /** reads: every grant (shared locks, semaphores); election reads: the leader's value */
  grants?: Grant[];
  value?: string;
  /** semaphores: permits granted, the limit, permits in use */
  permits?: number;
  limit?: number;
  inUse?: number;
  /** check */
  current?: boolean;
  /** close: the partition's names the session's end released; release-all: the names released */
  released?: string[];
  /** acquire-all: the grants, each name with its token */
  set?: { name: string; token: number }[];
  /** revoke: the grants taken away */
  revoked?: Grant[];
}

export interface HistState {
  m: LockModel;
  /** sessions created so far (alive or ended), sorted */
  seen: readonly string[];
  /** grant tokens that are placeholders: the real token is at least this */
  placeholders: readonly number[];
}

const LIMITS = { maxWaitersPerLock: 1_000_000 };

/** the WGL model of one name of kind `kind`, or of the lock names a partition of lock sets links */
export function historyModel(partition: string | readonly string[], kind: NameKind): Model<HistState, HistInput, HistOutput> {
  const names: readonly string[] = typeof partition === 'string' ? [partition] : [...partition].sort();
  if (names.length === 0 || (names.length > 1 && kind !== 'lock')) throw new Error(`history model: a partition of ${names.length} ${kind} names`);
  const first = names[0]!;
  const target = kind === 'semaphore' ? 'semaphore' : 'lock';

  /** the model's answer to `cmd` applied to a copy of `st` (index: the token it should get) */
  const run = (st: HistState, cmd: Command, index = 0): { st: HistState; r: ApplyResult } => {
    const m = st.m.clone();
    const r = m.apply(index, { atMs: 0, cmd }).result;
    // a placeholder whose grant ended is of no more use (the last token keeps its bound)
    const held = new Set(names.flatMap((n) => grantsIn(m, n).map((g) => g.token)));
    const placeholders = st.placeholders.some((p) => !held.has(p)) ? st.placeholders.filter((p) => held.has(p)) : st.placeholders;
    return { st: { ...st, m, placeholders }, r };
  };

  const dead = (st: HistState, s: string): boolean => st.seen.includes(s) && !st.m.sessions.has(s);

  /** the state with session s open (its first appearance), or null when it ended */
  const withSession = (st: HistState, s: string): HistState | null => {
    if (st.m.sessions.has(s)) return st;
    if (st.seen.includes(s)) return null;
    const m = st.m.clone();
    m.apply(0, { atMs: 0, cmd: { kind: 'openSession', sessionId: s, ttlMs: 1, owner: '', lockDelayMs: 0 } });
    return { ...st, m, seen: [...st.seen, s].sort() };
  };

  const grantsIn = (lm: LockModel, name: string): Grant[] => {
    if (kind === 'semaphore') return (lm.sems.get(name)?.holders ?? []).map((h) => ({ s: h.sid, token: h.token, permits: h.permits }));
    return (lm.locks.get(name)?.holders ?? []).map((h) => ({ s: h.sid, token: h.token, mode: h.mode }));
  };
  const grantsOf = (st: HistState, name: string): Grant[] => grantsIn(st.m, name);

  /** the grant of s on the name, if any */
  const grantOf = (st: HistState, s: string, name: string): Grant | undefined => grantsOf(st, name).find((g) => g.s === s);

  /** the state in which s's grant has token t: as it is, or a placeholder moved up to t;
   *  null when s's grant has another exact token (or none) */
  const fixToken = (st: HistState, s: string, t: number, name: string): HistState | null => {
    const g = grantOf(st, s, name);
    if (!g) return null;
    if (g.token === t) return st;
    if (!st.placeholders.includes(g.token) || t < g.token) return null;
    const m = st.m.clone();
    m.retoken(target, name, s, g.token, t);
    return { ...st, m, placeholders: st.placeholders.filter((p) => p !== g.token) };
  };

  /** every grant in `seen` is in st with those tokens (placeholders fixed), and no other: the state, or null */
  const matchGrants = (st: HistState, seen: readonly Grant[], exact: (a: Grant, b: Grant) => boolean, name: string): HistState | null => {
    const now = grantsOf(st, name);
    if (now.length !== seen.length) return null;
    let cur: HistState | null = st;
    for (const g of seen) {
      const mine = now.find((x) => x.s === g.s);
      if (!mine || !exact(mine, g)) return null;
      cur = fixToken(cur, g.s, g.token, name);
      if (cur === null) return null;
    }
    return cur;
  };

  /** a new grant's token: the answer's (exact), or a placeholder when nobody saw it */
  const granted = (st: HistState, cmd: Command, t: number | undefined, name: string): HistState[] => {
    const { st: next, r } = run(st, cmd, t ?? 0);
    if (!r.ok || (r.kind !== 'acquired' && r.kind !== 'sem_acquired')) return [];
    if (t === undefined) {
      const g = grantOf(next, (cmd as { sessionId: string }).sessionId, name)!;
      const isNew = grantOf(st, (cmd as { sessionId: string }).sessionId, name) === undefined;
      return [isNew ? { ...next, placeholders: [...next.placeholders, g.token].sort((a, b) => a - b) } : next];
    }
    if (r.fencingToken === t) return [next];
    // the grant it answers existed with a placeholder token: that token was t
    const fixed = fixToken(st, (cmd as { sessionId: string }).sessionId, t, name);
    return fixed ? [fixed] : [];
  };

  /** an acquire-like command: its definite answer, or info (both ways) */
  const acquire = (st: HistState, s: string, cmd: Command, out: HistOutput | undefined, name: string): HistState[] => {
    if (out?.type === 'fail' && out.code === 'session_not_found') return dead(st, s) ? [st] : [];
    if (dead(st, s)) return out === undefined ? [st] : [];
    const live = withSession(st, s)!;
    if (out === undefined) {
      // not applied, or applied: granted (unseen token) or refused (nothing changed)
      const g = granted(live, cmd, undefined, name);
      return [st, ...g];
    }
    if (out.type === 'ok') {
      const next = granted(live, cmd, out.token, name);
      if (kind === 'semaphore' && next.length > 0 && out.permits !== undefined) {
        const g = grantOf(next[0]!, s, name);
        if (g?.permits !== out.permits) return [];
      }
      return next;
    }
    const { r } = run(live, cmd);
    switch (out.code) {
      case 'lock_held': {
        if (r.ok) {
          // granted in the model: only a queue the history does not show could refuse a
          // share while shares are held
          const shared = cmd.kind === 'acquire' && cmd.mode === 'shared';
          return shared && out.holder == null && grantsOf(live, name).length > 0 && grantsOf(live, name).every((g) => g.mode === 'shared') ? [st] : [];
        }
        if (r.code !== 'lock_held') return [];
        const h = r.holder;
        if (out.holder === undefined) return [st]; // the answer named nobody we recorded
        if (out.holder === null) return h === undefined ? [st] : [];
        if (h === undefined || h.sessionId !== out.holder) return [];
        if (out.holderToken === undefined) return [st];
        const fixed = fixToken(st, out.holder, out.holderToken, name);
        return fixed ? [fixed] : [];
      }
      case 'semaphore_full': {
        const sem = live.m.sems.get(name);
        const inUse = sem ? sem.holders.reduce((n, h) => n + h.permits, 0) : 0;
        if (out.inUse !== undefined && out.inUse !== inUse) return [];
        if (r.ok) return inUse > 0 ? [st] : []; // room, but a larger request may wait at the head
        return r.code === 'semaphore_full' ? [st] : [];
      }
      case 'limit_mismatch':
        return !r.ok && r.code === 'limit_mismatch' && (out.limit === undefined || r.limit === out.limit) ? [st] : [];
      default:
        return [st]; // unavailable, too_many_requests, a 4xx: nothing was applied
    }
  };

  /** a command of session s (none: an operator's) whose ok answer must be one of `okKinds`
   *  and whose not_holder must be the model's; `prepare` adjusts the state it applies to
   *  for an ok or unknown answer (a release naming a placeholder grant's real token) */
  const definite = (st: HistState, s: string | undefined, cmd: Command, okKinds: readonly string[], out: HistOutput | undefined, prepare?: (x: HistState) => HistState): HistState[] => {
    if (s !== undefined && dead(st, s)) return out === undefined || out.code === 'session_not_found' ? [st] : [];
    if (out?.type === 'fail' && out.code === 'session_not_found') return [];
    const live = s === undefined ? st : withSession(st, s)!;
    if (out?.type === 'fail') {
      if (out.code !== 'not_holder') return [st]; // nothing applied
      const { r } = run(live, cmd);
      return !r.ok && r.code === 'not_holder' ? [live] : [];
    }
    const { st: next, r } = run(prepare ? prepare(live) : live, cmd);
    if (out === undefined) return r.ok ? [st, next] : [st];
    return r.ok && okKinds.includes(r.kind) ? [next] : [];
  };

  /**
   * A lock set (docs/contract.md §5): one command over its names, granted whole or refused.
   * Applied, as a single acquire is, as if it did not wait. Its answer's tokens must be the
   * model's: new grants are made in name order in one entry, so the smallest new token is
   * the entry's index (a name the session already held answers its grant's token, which
   * may fix a placeholder). A refusal changes nothing; `lock_held` while the model would
   * grant is allowed — a set queued at the head of a free name's queue (which the history
   * does not show) makes later requests for it wait — as is `deadlock` (the model applies
   * without waiting, so it has no wait-for graph to compare).
   */
  const acquireAll = (st: HistState, input: Extract<HistInput, { f: 'acquire-all' }>, out: HistOutput | undefined): HistState[] => {
    const s = input.s;
    if (input.names.some((n) => !names.includes(n))) throw new Error(`history model: a set of ${input.names.join(', ')} in the partition of ${names.join(', ')}`);
    const cmd: Command = { kind: 'acquireAll', names: [...input.names], sessionId: s, waitMs: 0, ...(input.maxHoldMs ? { maxHoldMs: input.maxHoldMs } : {}) };
    if (out?.type === 'fail' && out.code === 'session_not_found') return dead(st, s) ? [st] : [];
    if (dead(st, s)) return out === undefined ? [st] : [];
    const live = withSession(st, s)!;
    const had = new Set(input.names.filter((n) => grantOf(live, s, n) !== undefined));
    if (out === undefined) {
      const { st: next, r } = run(live, cmd);
      if (!r.ok || r.kind !== 'acquired_all') return [st];
      const fresh = input.names.filter((n) => !had.has(n)).map((n) => grantOf(next, s, n)!.token);
      return [st, { ...next, placeholders: [...next.placeholders, ...fresh].sort((a, b) => a - b) }];
    }
    if (out.type === 'ok') {
      const set = out.set ?? [];
      // the answer lists every name of the set once (checkLockSets names the partial answer)
      if (set.length !== input.names.length || input.names.some((n) => set.filter((g) => g.name === n).length !== 1)) return [];
      const fresh = set.filter((g) => !had.has(g.name)).map((g) => g.token);
      const { st: next, r } = run(live, cmd, fresh.length > 0 ? Math.min(...fresh) : 0);
      if (!r.ok || r.kind !== 'acquired_all') return [];
      let cur: HistState | null = next;
      for (const g of set) {
        cur = fixToken(cur, s, g.token, g.name);
        if (cur === null) return [];
      }
      return [cur];
    }
    return [st]; // lock_held, deadlock, unavailable, another 4xx: nothing was applied
  };

  /** releases the session's grants among the names (and ends its waits on them); an ok
   *  answer lists exactly the names the model released */
  const releaseAll = (st: HistState, input: Extract<HistInput, { f: 'release-all' }>, out: HistOutput | undefined): HistState[] => {
    const s = input.s;
    if (out?.type === 'fail' && out.code === 'session_not_found') return dead(st, s) ? [st] : [];
    if (dead(st, s)) return out === undefined ? [st] : [];
    if (out?.type === 'fail') return [st]; // nothing applied
    const live = withSession(st, s)!;
    const { st: next, r } = run(live, { kind: 'releaseAll', names: [...input.names], sessionId: s });
    if (!r.ok || r.kind !== 'released_all') return out === undefined ? [st] : [];
    if (out === undefined) return [st, next];
    const said = new Set((out.released ?? []).filter((n) => input.names.includes(n)));
    return said.size === r.released.length && r.released.every((n) => said.has(n)) ? [next] : [];
  };

  const m: Model<HistState, HistInput, HistOutput> = {
    init: () => ({ m: new LockModel(LIMITS), seen: [], placeholders: [] }),
    key(st) {
      const parts = names.map((name) => {
        const l = st.m.locks.get(name);
        const sem = st.m.sems.get(name);
        const lk = l ? l.holders.map((h) => `${h.sid}${h.mode === 'shared' ? 's' : ''}:${h.token}${h.value !== undefined ? `=${h.value}` : ''}${h.maxHoldMs ? 'h' : ''}`).join(',') : '';
        const sk = sem ? `${sem.limit}/${sem.holders.map((h) => `${h.sid}:${h.permits}:${h.token}${h.maxHoldMs ? 'h' : ''}`).join(',')}` : '';
        return `${lk}|${sk}`;
      });
      const alive = [...st.m.sessions.keys()].sort().join('.');
      return `${parts.join(';')}|${st.m.lastToken}|${st.placeholders.join('.')}|${alive}|${st.seen.join('.')}`;
    },
    // Search hints (wgl.ts): an info operation's "never happened" outcome and an expiry of a
    // session or a hold that changes nothing yet can wait for the end of their windows.
    deferrable: (input, out) => out === undefined,
    defer(st, input, _out, outcomes) {
      if (input.f === 'expire' || input.f === 'expire-hold') {
        const now = m.step(st, input, undefined)[0]!;
        const matters = input.f === 'expire' ? names.some((n) => grantOf(st, input.s, n) !== undefined) : m.key(now) !== m.key(st);
        return { late: now, early: matters ? [now] : [] };
      }
      const k = m.key(st);
      return { late: st, early: outcomes.filter((x) => m.key(x) !== k) };
    },
    // Search hint (wgl.ts): ops that change nothing from here on. An unknown read, check or
    // renew never changes the state; an unknown op of a session that ended cannot (ended
    // sessions never come back); the expiry of a grant with a known token once that grant
    // is gone cannot either (tokens are never given twice, and a later grant of the session
    // takes a token above lastToken — a placeholder included).
    inert(st, input, out) {
      if (out !== undefined) return false;
      if (input.f === 'read' || input.f === 'check' || input.f === 'renew') return true;
      if (input.f === 'revoke' || input.f === 'sem-limit') return false;
      if (dead(st, input.s)) return true;
      if (input.f === 'expire-hold' && input.token !== undefined) return st.m.lastToken >= input.token && grantOf(st, input.s, input.name ?? first) === undefined;
      return false;
    },
    step(st, input, out) {
      // the name a per-name operation is on (in a partition of one name: that name)
      const name = ('name' in input ? input.name : undefined) ?? first;
      if (!names.includes(name)) throw new Error(`history model: ${input.f} of ${name} in the partition of ${names.join(', ')}`);
      switch (input.f) {
        case 'acquire-all':
          return acquireAll(st, input, out);
        case 'release-all':
          return releaseAll(st, input, out);
        case 'acquire':
          return acquire(st, input.s, { kind: 'acquire', name, sessionId: input.s, waitMs: 0, ...(input.mode ? { mode: input.mode } : {}), ...(input.maxHoldMs ? { maxHoldMs: input.maxHoldMs } : {}) }, out, name);
        case 'campaign':
          return acquire(st, input.s, { kind: 'campaign', name, sessionId: input.s, value: input.value, waitMs: 0, ...(input.maxHoldMs ? { maxHoldMs: input.maxHoldMs } : {}) }, out, name);
        case 'sem-acquire': {
          const cmd = (limit: number): Command => ({ kind: 'semAcquire', name, sessionId: input.s, limit, permits: input.permits, waitMs: 0, ...(input.maxHoldMs ? { maxHoldMs: input.maxHoldMs } : {}) });
          // A wait queued under the request's limit stays queued through a resize and is
          // granted under the limit in force then (docs/contract.md: "shrinking never takes
          // permits away, new grants wait"; semaphores.ts semSetLimit). Collapsed into one
          // point, that grant is the request under the limit of its moment: an ok answer
          // naming another limit is the grant under that limit, and an unknown outcome may be
          // a grant under the limit now. (Whether the request was queued under its own limit
          // earlier is not checked: the model keeps no past.)
          if (out?.type === 'ok' && out.limit !== undefined && out.limit !== input.limit) return acquire(st, input.s, cmd(out.limit), out, name);
          const now = st.m.sems.get(name)?.limit;
          const asked = acquire(st, input.s, cmd(input.limit), out, name);
          if (out !== undefined || now === undefined || now === input.limit) return asked;
          return [...asked, ...acquire(st, input.s, cmd(now), out, name).filter((x) => x !== st)];
        }
        case 'release': {
          const t = input.token;
          // a release naming a placeholder's grant by a token at least it: that grant's token
          const prepare = t === undefined ? undefined : (x: HistState): HistState => fixToken(x, input.s, t, name) ?? x;
          return definite(st, input.s, { kind: 'release', name, sessionId: input.s, ...(t !== undefined ? { fencingToken: t } : {}) }, ['released'], out, prepare);
        }
        case 'sem-release':
          return definite(st, input.s, { kind: 'semRelease', name, sessionId: input.s }, ['sem_released'], out);
        case 'resign':
          return definite(st, input.s, { kind: 'resign', name, sessionId: input.s }, ['resigned'], out);
        case 'proclaim':
          return definite(st, input.s, { kind: 'proclaim', name, sessionId: input.s, value: input.value }, ['proclaimed'], out);
        case 'sem-limit':
          return definite(st, undefined, { kind: 'semSetLimit', name, limit: input.limit }, ['sem_limit'], out);
        case 'renew': {
          if (out === undefined) return [st];
          if (out.type === 'fail' && out.code === 'session_not_found') return dead(st, input.s) ? [st] : [];
          if (dead(st, input.s)) return [];
          const live = withSession(st, input.s)!;
          if (out.type === 'fail') return out.code === 'not_holder' ? (grantOf(live, input.s, name) ? [] : [live]) : [st];
          const fixed = out.token === undefined ? (grantOf(live, input.s, name) ? live : null) : fixToken(live, input.s, out.token, name);
          return fixed ? [fixed] : [];
        }
        case 'read': {
          if (out === undefined || out.type === 'fail') return [st];
          const gs = grantsOf(st, name);
          if (kind === 'semaphore') {
            const sem = st.m.sems.get(name);
            if (out.limit !== undefined && sem && out.limit !== sem.limit) return [];
            if (out.inUse !== undefined && out.inUse !== gs.reduce((n, g) => n + (g.permits ?? 0), 0)) return [];
            if (out.grants === undefined) return [st];
            const next = matchGrants(st, out.grants, (a, b) => a.permits === b.permits, name);
            return next ? [next] : [];
          }
          if (out.grants !== undefined) {
            const next = matchGrants(st, out.grants, (a, b) => (a.mode ?? 'exclusive') === (b.mode ?? 'exclusive'), name);
            if (!next) return [];
            if (kind === 'election' && out.value !== undefined) {
              const v = next.m.locks.get(name)?.holders.find((h) => h.mode === 'exclusive')?.value;
              if (v !== out.value) return [];
            }
            return [next];
          }
          const x = gs.find((g) => g.mode === 'exclusive');
          if (out.holder === null || out.holder === undefined) return x === undefined && (kind !== 'election' || gs.length === 0) ? [st] : [];
          if (!x || x.s !== out.holder) return [];
          const fixed = out.holderToken === undefined ? st : fixToken(st, x.s, out.holderToken, name);
          if (!fixed) return [];
          if (kind === 'election' && out.value !== undefined && fixed.m.locks.get(name)?.holders.find((h) => h.mode === 'exclusive')?.value !== out.value) return [];
          return [fixed];
        }
        case 'check': {
          if (out === undefined || out.type === 'fail') return [st];
          const gs = grantsOf(st, name);
          if (out.current) {
            const exact = gs.find((g) => g.token === input.token);
            if (exact) return [st];
            // a placeholder grant whose real token may be this one
            return gs.filter((g) => st.placeholders.includes(g.token) && input.token >= g.token).map((g) => fixToken(st, g.s, input.token, name)!);
          }
          return gs.some((g) => g.token === input.token) ? [] : [st];
        }
        case 'close': {
          if (out === undefined) return dead(st, input.s) ? [st] : [st, run(withSession(st, input.s)!, { kind: 'closeSession', sessionId: input.s }).st];
          if (out.type === 'fail') return out.code === 'session_not_found' ? (dead(st, input.s) ? [st] : []) : [st];
          if (dead(st, input.s)) return [];
          const live = withSession(st, input.s)!;
          // a close answered ok ended a live session; `released` names exactly what it held
          if (out.released !== undefined && kind !== 'semaphore' && names.some((n) => out.released!.includes(n) !== (grantOf(live, input.s, n) !== undefined))) return [];
          return [run(live, { kind: 'closeSession', sessionId: input.s }).st];
        }
        case 'expire':
          if (!st.m.sessions.has(input.s)) return st.seen.includes(input.s) ? [st] : [{ ...st, seen: [...st.seen, input.s].sort() }];
          return [run(st, { kind: 'expireSession', sessionId: input.s }).st];
        case 'expire-hold': {
          const g = grantOf(st, input.s, name);
          if (!g) return [st];
          const token = input.token !== undefined && !st.placeholders.includes(g.token) ? input.token : g.token;
          return [run(st, { kind: 'expireHold', target, name, sessionId: input.s, fencingToken: token }).st];
        }
        case 'revoke': {
          const cmd: Command = { kind: 'revoke', target, name, ...(input.s !== undefined ? { sessionId: input.s } : {}) };
          if (out === undefined) {
            const { st: next, r } = run(st, cmd);
            return r.ok ? [st, next] : [st];
          }
          if (out.type === 'fail') {
            const { r } = run(st, cmd);
            if (out.code === 'not_holder' || out.code === 'session_not_found') return !r.ok && r.code === out.code ? [st] : [];
            return [st];
          }
          // the grants taken away: exactly those the model takes (placeholders fixed first)
          let cur: HistState | null = st;
          const expect = input.s === undefined ? grantsOf(st, name) : grantsOf(st, name).filter((g) => g.s === input.s);
          if ((out.revoked ?? []).length !== expect.length) return [];
          for (const g of out.revoked ?? []) {
            if (!expect.some((x) => x.s === g.s)) return [];
            cur = fixToken(cur, g.s, g.token, name);
            if (cur === null) return [];
          }
          const { st: next, r } = run(cur, cmd);
          return r.ok ? [next] : [];
        }
      }
    },
  };
  return m;
}
