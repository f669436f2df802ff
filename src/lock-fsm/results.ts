// What one apply() returns: a typed result for the proposer (expected outcomes are values,
// never exceptions: docs/architecture.md "Rules", rule 4) and the events the leader's API layer and
// lessor react to. Results are also stored in the idempotency table and in snapshots, so
// they are plain data and parseApplyResult can validate and canonicalize a decoded one.

import { isElectionValue, isIntIn, isLockName, isOwner, isSessionId, MAX_DURATION_MS, MAX_PERMITS, MAX_SET_NAMES } from './names.js';

export interface HolderInfo {
  sessionId: string;
  owner: string;
  fencingToken: number;
}

export type ApplyResult =
  /** mode: present ('shared') for a shared grant only, so exclusive results keep their shape.
   *  value: present for an election's grant only (a campaign won, docs/lock-fsm.md
   *  "Elections"): the leader's value at the time of this apply */
  | { ok: true; kind: 'acquired'; name: string; sessionId: string; fencingToken: number; ttlMs: number; mode?: 'shared'; value?: string }
  /** an election leader's new value */
  | { ok: true; kind: 'proclaimed'; name: string; value: string }
  /** the leader stepped down, or a waiting candidate withdrew (wasLeader false) */
  | { ok: true; kind: 'resigned'; name: string; wasLeader: boolean }
  /** position: 1-based place in the lock's FIFO queue at the time of this apply */
  | { ok: true; kind: 'queued'; name: string; sessionId: string; position: number }
  | { ok: true; kind: 'released'; name: string }
  | { ok: true; kind: 'session_opened'; sessionId: string; ttlMs: number }
  /** closeSession and expireSession: released = the locks it held, sorted by name */
  | { ok: true; kind: 'session_closed'; sessionId: string; released: string[] }
  | { ok: true; kind: 'wait_cancelled'; name: string; sessionId: string }
  | { ok: true; kind: 'noop' }
  /** semaphores (semaphores.ts): permits held and the limit in force at the grant */
  | { ok: true; kind: 'sem_acquired'; name: string; sessionId: string; permits: number; limit: number; fencingToken: number; ttlMs: number }
  | { ok: true; kind: 'sem_queued'; name: string; sessionId: string; position: number }
  | { ok: true; kind: 'sem_released'; name: string }
  | { ok: true; kind: 'sem_limit'; name: string; limit: number }
  /** revoke (docs/lock-fsm.md "Revocation and maximum hold"): the grants it ended, sorted
   *  by session id (empty when the name had none and no session was named) */
  | { ok: true; kind: 'revoked'; target: GrantKind; name: string; revoked: RevokedGrant[] }
  /** acquireAll (docs/lock-fsm.md "Lock sets"): every name granted in this apply (or held
   *  already: its existing token), in the request's order; mode 'shared' for a shared set */
  | { ok: true; kind: 'acquired_all'; sessionId: string; ttlMs: number; grants: SetGrant[]; mode?: 'shared' }
  /** acquireAll that waits: one place in the queue of every name it needs, at log index
   *  `since` (the wait's identity, as Waiter.since); names in the request's order */
  | { ok: true; kind: 'queued_all'; sessionId: string; names: string[]; since: number }
  /** releaseAll: the names it released, in the request's order (its waits on them ended too) */
  | { ok: true; kind: 'released_all'; released: string[] }
  /** a wait that would close a cycle in the wait-for graph (docs/lock-fsm.md "Deadlock
   *  detection"): nothing was changed. cycle[0] is the refused request's session */
  | { ok: false; code: 'deadlock'; cycle: CycleEntry[] }
  /** a semaphore acquire naming another limit than the one in force */
  | { ok: false; code: 'limit_mismatch'; limit: number }
  /** a semaphore acquire that could not be granted at once and did not wait */
  | { ok: false; code: 'semaphore_full'; inUse: number; limit: number }
  /** holder is absent while the lock is free but in lock-delay; value: present when the
   *  holder is an election's leader (its value), so a campaign can name the leader.
   *  blocked: an acquireAll's refusal, one row per name that stood in its way */
  | { ok: false; code: 'lock_held'; holder?: HolderInfo; value?: string; blocked?: BlockedName[] }
  | { ok: false; code: 'not_holder' }
  | { ok: false; code: 'session_not_found' }
  /** openSession / acquire+newSession with an id that is already live: the leader must draw again */
  | { ok: false; code: 'session_exists' }
  /** the command's actor is not the principal that opened the session (docs/security.md "Sessions belong to their token") */
  | { ok: false; code: 'permission_denied' }
  /** sessions: max_sessions; waiters: max_waiters_per_lock; sessions_per_token:
   *  max_sessions_per_token; locks: max_locks (lock entries plus queued waits) */
  | { ok: false; code: 'too_many_requests'; limit: LimitName }
  /** the entry's Idempotency-Key was first used for another request (docs/lock-fsm.md
   *  "Idempotency"): nothing was applied. differs: the first part of the binding that
   *  differs, in the order principal, operation, name, body. Never stored (the key keeps
   *  its first answer), so never in a snapshot. */
  | { ok: false; code: 'idempotency_key_reused'; differs: KeyReuse };

/** what made a key's reuse another request (ApplyResult idempotency_key_reused) */
export type KeyReuse = 'principal' | 'operation' | 'name' | 'body';

/** what a grant is of: revoke and expireHold name it (an election, when it has a grant
 *  path of its own, becomes one more kind) */
export type GrantKind = 'lock' | 'semaphore';
export const GRANT_KINDS: readonly GrantKind[] = ['lock', 'semaphore'];

export interface RevokedGrant { sessionId: string; fencingToken: number }

/** one name of a granted lock set, with its own token */
export interface SetGrant { name: string; fencingToken: number }

/** a name that kept a lock set from being granted: holder is its exclusive holder (absent
 *  while it is held shared, in lock-delay, or free with a request queued ahead) */
export interface BlockedName { name: string; holder?: HolderInfo }

/** one step of a deadlock cycle: this session waits on `name` for the next entry's session
 *  (the last entry's for the first's). kind 'semaphore' when `name` is a semaphore's. */
export interface CycleEntry { sessionId: string; name: string; kind?: 'semaphore' }

export type LimitName = 'sessions' | 'waiters' | 'sessions_per_token' | 'locks';
const LIMIT_NAMES: readonly string[] = ['sessions', 'waiters', 'sessions_per_token', 'locks'] satisfies LimitName[];

export type FsmEvent =
  /** a lock was granted: to the acquirer, or to a waiter handed the lock by a
   *  release / close / expiry / endLockDelay / resign in this same apply. maxHoldMs: present
   *  when the acquire asked for a maximum hold (the lessor arms its deadline from this
   *  event). value: present exactly when the grant is an election's (a campaign won): the
   *  leader's value. The watch reports such a grant as `acquired` with kind "election"
   *  and this value (docs/contract.md "Watch"); every other consumer treats it as the lock
   *  grant it is. */
  | { type: 'granted'; name: string; sessionId: string; fencingToken: number; mode?: 'shared'; maxHoldMs?: number; value?: string }
  /** an election's leader changed its value (proclaim): watch event `proclaimed` */
  | { type: 'proclaimed'; name: string; sessionId: string; fencingToken: number; value: string }
  /** an election's leader stepped down (resign): watch event `resigned`. It comes before
   *  the `granted` (with value) of the next candidate, which the same apply makes leader.
   *  A candidate that withdraws while waiting emits waitEnded {reason: 'cancelled'} instead. */
  | { type: 'resigned'; name: string; sessionId: string; fencingToken: number }
  /** permits of a semaphore were granted (to the acquirer or a waiter); maxHoldMs as for granted */
  | { type: 'semGranted'; name: string; sessionId: string; fencingToken: number; permits: number; limit: number; maxHoldMs?: number }
  /** a grant was taken away by a `revoke` command (an administrator), with no lock-delay;
   *  any waiter it lets in follows as `granted` / `semGranted` in the same apply. The
   *  watch stream's `revoked` event. mode: 'shared' for a lock's shared grant */
  | { type: 'revoked'; kind: GrantKind; name: string; sessionId: string; fencingToken: number; mode?: 'shared'; election?: true }
  /** a grant reached its max_hold_ms and was freed by the lessor's `expireHold` (its
   *  session stays alive). A lock's grant then enters lock-delay if its session has one
   *  (lockDelayStarted follows), as on session expiry. The watch stream's `expired` event
   *  with "reason": "max_hold" (a session's expiry shows as sessionEnded instead) */
  | { type: 'grantExpired'; kind: GrantKind; name: string; sessionId: string; fencingToken: number; reason: 'max_hold'; mode?: 'shared'; election?: true }
  // election: true on released / revoked / grantExpired when the grant that ended was an
  // election's leadership (the watch reports it with kind "election")
  | { type: 'semWaitEnded'; name: string; sessionId: string; reason: 'cancelled' | 'session_ended' }
  | { type: 'waitEnded'; name: string; sessionId: string; reason: 'cancelled' | 'session_ended' }
  | { type: 'sessionEnded'; sessionId: string; reason: 'closed' | 'expired'; released: string[] }
  /** since: the index of this entry, the delay's identity (endLockDelay names it) */
  | { type: 'lockDelayStarted'; name: string; delayMs: number; since: number }
  | { type: 'lockDelayEnded'; name: string }
  | { type: 'sessionOpened'; sessionId: string; ttlMs: number }
  // The events below exist for the watch feed (docs/lock-fsm.md "Events for watch"): every
  // change a watcher can see is one event, in apply order, so the node never has to diff
  // states. A grant's end comes before the grants it lets through (released, then granted).
  /** a lock grant (exclusive, or one share) ended: reason released (a release), closed
   *  (its session was closed) or expired (its session expired) */
  | { type: 'released'; name: string; sessionId: string; fencingToken: number; mode?: 'shared'; reason: GrantEndReason; election?: true }
  /** a semaphore grant ended, reasons as for released */
  | { type: 'semReleased'; name: string; sessionId: string; fencingToken: number; permits: number; reason: GrantEndReason }
  /** a request joined a lock's queue */
  | { type: 'waiting'; name: string; sessionId: string; mode?: 'shared' }
  /** a request joined a semaphore's queue */
  | { type: 'semWaiting'; name: string; sessionId: string; permits: number }
  /** a semaphore with holders or waiters got another limit (before the grants it admits) */
  | { type: 'semLimit'; name: string; limit: number }
  /** a waiting lock set was granted (after its `granted` events): its queued acquireAll,
   *  named by `since`, is answered with these grants, in the request's order */
  | { type: 'setGranted'; sessionId: string; since: number; grants: SetGrant[]; mode?: 'shared' };

/** why a grant ended (FsmEvent released / semReleased) */
export type GrantEndReason = 'released' | 'closed' | 'expired';

export interface ApplyOutput {
  result: ApplyResult;
  events: FsmEvent[];
  /** the entry's Idempotency-Key was seen before: `result` is the stored first answer and
   *  nothing was done. The API answers it as it is, whatever the state is now (a retry
   *  returns the first answer: docs/contract.md "Idempotency"). Absent otherwise. */
  replayed?: true;
}

type Obj = Record<string, unknown>;
const MAXI = Number.MAX_SAFE_INTEGER;

function fail(path: string, what: string): never {
  throw new Error(`corrupt lock-fsm snapshot: ${path} ${what}`);
}

function exact(o: Obj, keys: readonly string[], path: string): void {
  const got = Object.keys(o).filter((k) => o[k] !== undefined);
  for (const k of got) if (!keys.includes(k)) fail(`${path}.${k}`, 'is not a known field');
}

function s(o: Obj, k: string, ok: (x: unknown) => boolean, path: string): string {
  if (!ok(o[k])) fail(`${path}.${k}`, 'is missing or malformed');
  return o[k] as string;
}

function n(o: Obj, k: string, lo: number, hi: number, path: string): number {
  const v = o[k];
  if (!isIntIn(v, lo, hi)) fail(`${path}.${k}`, `must be an integer in [${lo}, ${hi}]`);
  return v;
}

function parseHolder(x: unknown, path: string): HolderInfo {
  if (typeof x !== 'object' || x === null) fail(path, 'must be an object');
  const o = x as Obj;
  exact(o, ['sessionId', 'owner', 'fencingToken'], path);
  return { sessionId: s(o, 'sessionId', isSessionId, path), owner: s(o, 'owner', isOwner, path), fencingToken: n(o, 'fencingToken', 1, MAXI, path) };
}

function parseOk(o: Obj, path: string): ApplyResult {
  const p = path;
  switch (o['kind']) {
    case 'acquired': {
      exact(o, ['ok', 'kind', 'name', 'sessionId', 'fencingToken', 'ttlMs', 'mode', 'value'], p);
      const r: ApplyResult = { ok: true, kind: 'acquired', name: s(o, 'name', isLockName, p), sessionId: s(o, 'sessionId', isSessionId, p), fencingToken: n(o, 'fencingToken', 1, MAXI, p), ttlMs: n(o, 'ttlMs', 1, MAX_DURATION_MS, p) };
      if (o['mode'] !== undefined && o['mode'] !== 'shared') fail(`${p}.mode`, 'must be "shared" when present');
      if (o['mode'] === 'shared') r.mode = 'shared';
      if (o['value'] !== undefined) {
        if (r.mode === 'shared') fail(`${p}.value`, 'is not a field of a shared grant');
        r.value = s(o, 'value', isElectionValue, p);
      }
      return r;
    }
    case 'proclaimed':
      exact(o, ['ok', 'kind', 'name', 'value'], p);
      return { ok: true, kind: 'proclaimed', name: s(o, 'name', isLockName, p), value: s(o, 'value', isElectionValue, p) };
    case 'resigned':
      exact(o, ['ok', 'kind', 'name', 'wasLeader'], p);
      if (typeof o['wasLeader'] !== 'boolean') fail(`${p}.wasLeader`, 'must be a boolean');
      return { ok: true, kind: 'resigned', name: s(o, 'name', isLockName, p), wasLeader: o['wasLeader'] };
    case 'sem_acquired':
      exact(o, ['ok', 'kind', 'name', 'sessionId', 'permits', 'limit', 'fencingToken', 'ttlMs'], p);
      return { ok: true, kind: 'sem_acquired', name: s(o, 'name', isLockName, p), sessionId: s(o, 'sessionId', isSessionId, p), permits: n(o, 'permits', 1, MAX_PERMITS, p), limit: n(o, 'limit', 1, MAX_PERMITS, p), fencingToken: n(o, 'fencingToken', 1, MAXI, p), ttlMs: n(o, 'ttlMs', 1, MAX_DURATION_MS, p) };
    case 'sem_queued':
      exact(o, ['ok', 'kind', 'name', 'sessionId', 'position'], p);
      return { ok: true, kind: 'sem_queued', name: s(o, 'name', isLockName, p), sessionId: s(o, 'sessionId', isSessionId, p), position: n(o, 'position', 1, MAXI, p) };
    case 'sem_released':
      exact(o, ['ok', 'kind', 'name'], p);
      return { ok: true, kind: 'sem_released', name: s(o, 'name', isLockName, p) };
    case 'sem_limit':
      exact(o, ['ok', 'kind', 'name', 'limit'], p);
      return { ok: true, kind: 'sem_limit', name: s(o, 'name', isLockName, p), limit: n(o, 'limit', 1, MAX_PERMITS, p) };
    case 'revoked': {
      exact(o, ['ok', 'kind', 'target', 'name', 'revoked'], p);
      const target = o['target'];
      if (typeof target !== 'string' || !(GRANT_KINDS as readonly string[]).includes(target)) fail(`${p}.target`, `must be one of ${GRANT_KINDS.join(', ')}`);
      const rows = o['revoked'];
      if (!Array.isArray(rows)) fail(`${p}.revoked`, 'must be an array');
      const revoked = rows.map((x: unknown, i): RevokedGrant => {
        const q = `${p}.revoked[${i}]`;
        if (typeof x !== 'object' || x === null || Array.isArray(x)) fail(q, 'must be an object');
        const g = x as Obj;
        exact(g, ['sessionId', 'fencingToken'], q);
        return { sessionId: s(g, 'sessionId', isSessionId, q), fencingToken: n(g, 'fencingToken', 1, MAXI, q) };
      });
      return { ok: true, kind: 'revoked', target: target as GrantKind, name: s(o, 'name', isLockName, p), revoked };
    }
    case 'acquired_all': {
      exact(o, ['ok', 'kind', 'sessionId', 'ttlMs', 'grants', 'mode'], p);
      const r: ApplyResult = { ok: true, kind: 'acquired_all', sessionId: s(o, 'sessionId', isSessionId, p), ttlMs: n(o, 'ttlMs', 1, MAX_DURATION_MS, p), grants: setGrants(o['grants'], `${p}.grants`) };
      if (o['mode'] !== undefined && o['mode'] !== 'shared') fail(`${p}.mode`, 'must be "shared" when present');
      if (o['mode'] === 'shared') r.mode = 'shared';
      return r;
    }
    case 'queued_all':
      exact(o, ['ok', 'kind', 'sessionId', 'names', 'since'], p);
      return { ok: true, kind: 'queued_all', sessionId: s(o, 'sessionId', isSessionId, p), names: nameList(o['names'], `${p}.names`), since: n(o, 'since', 1, MAXI, p) };
    case 'released_all': {
      exact(o, ['ok', 'kind', 'released'], p);
      const rel = o['released'];
      if (!Array.isArray(rel) || rel.length > MAX_SET_NAMES || !rel.every(isLockName)) fail(`${p}.released`, `must be an array of at most ${MAX_SET_NAMES} lock names`);
      return { ok: true, kind: 'released_all', released: [...(rel as string[])] };
    }
    case 'queued':
      exact(o, ['ok', 'kind', 'name', 'sessionId', 'position'], p);
      return { ok: true, kind: 'queued', name: s(o, 'name', isLockName, p), sessionId: s(o, 'sessionId', isSessionId, p), position: n(o, 'position', 1, MAXI, p) };
    case 'released':
      exact(o, ['ok', 'kind', 'name'], p);
      return { ok: true, kind: 'released', name: s(o, 'name', isLockName, p) };
    case 'session_opened':
      exact(o, ['ok', 'kind', 'sessionId', 'ttlMs'], p);
      return { ok: true, kind: 'session_opened', sessionId: s(o, 'sessionId', isSessionId, p), ttlMs: n(o, 'ttlMs', 1, MAX_DURATION_MS, p) };
    case 'session_closed': {
      exact(o, ['ok', 'kind', 'sessionId', 'released'], p);
      const rel = o['released'];
      if (!Array.isArray(rel) || !rel.every(isLockName)) fail(`${p}.released`, 'must be an array of lock names');
      return { ok: true, kind: 'session_closed', sessionId: s(o, 'sessionId', isSessionId, p), released: [...(rel as string[])] };
    }
    case 'wait_cancelled':
      exact(o, ['ok', 'kind', 'name', 'sessionId'], p);
      return { ok: true, kind: 'wait_cancelled', name: s(o, 'name', isLockName, p), sessionId: s(o, 'sessionId', isSessionId, p) };
    case 'noop':
      exact(o, ['ok', 'kind'], p);
      return { ok: true, kind: 'noop' };
    default:
      return fail(`${p}.kind`, 'is unknown');
  }
}

function parseErr(o: Obj, path: string): ApplyResult {
  switch (o['code']) {
    case 'lock_held':
      exact(o, ['ok', 'code', 'holder', 'value', 'blocked'], path);
      if (o['blocked'] !== undefined) {
        if (o['holder'] !== undefined || o['value'] !== undefined) fail(`${path}.blocked`, 'is not given with holder or value');
        return { ok: false, code: 'lock_held', blocked: blockedList(o['blocked'], `${path}.blocked`) };
      }
      if (o['holder'] === undefined) {
        if (o['value'] !== undefined) fail(`${path}.value`, 'needs a holder');
        return { ok: false, code: 'lock_held' };
      }
      if (o['value'] === undefined) return { ok: false, code: 'lock_held', holder: parseHolder(o['holder'], `${path}.holder`) };
      return { ok: false, code: 'lock_held', holder: parseHolder(o['holder'], `${path}.holder`), value: s(o, 'value', isElectionValue, path) };
    case 'not_holder':
    case 'session_not_found':
    case 'session_exists':
    case 'permission_denied':
      exact(o, ['ok', 'code'], path);
      return { ok: false, code: o['code'] };
    case 'deadlock':
      exact(o, ['ok', 'code', 'cycle'], path);
      return { ok: false, code: 'deadlock', cycle: cycleList(o['cycle'], `${path}.cycle`) };
    case 'limit_mismatch':
      exact(o, ['ok', 'code', 'limit'], path);
      return { ok: false, code: 'limit_mismatch', limit: n(o, 'limit', 1, MAX_PERMITS, path) };
    case 'semaphore_full':
      exact(o, ['ok', 'code', 'inUse', 'limit'], path);
      return { ok: false, code: 'semaphore_full', inUse: n(o, 'inUse', 0, MAXI, path), limit: n(o, 'limit', 1, MAX_PERMITS, path) };
    case 'too_many_requests': {
      exact(o, ['ok', 'code', 'limit'], path);
      const limit = o['limit'];
      if (typeof limit !== 'string' || !LIMIT_NAMES.includes(limit)) fail(`${path}.limit`, `must be one of ${LIMIT_NAMES.join(', ')}`);
      return { ok: false, code: 'too_many_requests', limit: limit as LimitName };
    }
    default:
      return fail(`${path}.code`, 'is unknown');
  }
}

function row(x: unknown, path: string): Obj {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) fail(path, 'must be an object');
  return x as Obj;
}

/** 1–64 distinct lock names */
function nameList(x: unknown, path: string): string[] {
  if (!Array.isArray(x) || x.length < 1 || x.length > MAX_SET_NAMES || !x.every(isLockName) || new Set(x).size !== x.length) fail(path, `must be 1–${MAX_SET_NAMES} distinct lock names`);
  return [...(x as string[])];
}

function setGrants(x: unknown, path: string): SetGrant[] {
  if (!Array.isArray(x) || x.length < 1 || x.length > MAX_SET_NAMES) fail(path, `must be an array of 1–${MAX_SET_NAMES} grants`);
  const out = x.map((g: unknown, i): SetGrant => {
    const o = row(g, `${path}[${i}]`);
    exact(o, ['name', 'fencingToken'], `${path}[${i}]`);
    return { name: s(o, 'name', isLockName, `${path}[${i}]`), fencingToken: n(o, 'fencingToken', 1, MAXI, `${path}[${i}]`) };
  });
  if (new Set(out.map((g) => g.name)).size !== out.length) fail(path, 'names a lock twice');
  return out;
}

function blockedList(x: unknown, path: string): BlockedName[] {
  if (!Array.isArray(x) || x.length < 1 || x.length > MAX_SET_NAMES) fail(path, `must be an array of 1–${MAX_SET_NAMES} names`);
  return x.map((b: unknown, i): BlockedName => {
    const q = `${path}[${i}]`;
    const o = row(b, q);
    exact(o, ['name', 'holder'], q);
    const name = s(o, 'name', isLockName, q);
    return o['holder'] === undefined ? { name } : { name, holder: parseHolder(o['holder'], `${q}.holder`) };
  });
}

function cycleList(x: unknown, path: string): CycleEntry[] {
  if (!Array.isArray(x) || x.length < 1) fail(path, 'must be a non-empty array');
  return x.map((e: unknown, i): CycleEntry => {
    const q = `${path}[${i}]`;
    const o = row(e, q);
    exact(o, ['sessionId', 'name', 'kind'], q);
    const entry: CycleEntry = { sessionId: s(o, 'sessionId', isSessionId, q), name: s(o, 'name', isLockName, q) };
    if (o['kind'] !== undefined && o['kind'] !== 'semaphore') fail(`${q}.kind`, 'must be "semaphore" when present');
    if (o['kind'] === 'semaphore') entry.kind = 'semaphore';
    return entry;
  });
}

/** Validates a decoded ApplyResult and rebuilds it with canonical key order. */
export function parseApplyResult(x: unknown, path = 'result'): ApplyResult {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) fail(path, 'must be an object');
  const o = x as Obj;
  if (o['ok'] === true) return parseOk(o, path);
  if (o['ok'] === false) return parseErr(o, path);
  return fail(`${path}.ok`, 'must be a boolean');
}
