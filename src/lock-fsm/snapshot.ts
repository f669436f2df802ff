// Deterministic snapshot of the lock FSM. exportState gives a plain JSON/msgpack-able
// value in canonical form: sessions sorted by id, locks sorted by name, waiters in queue
// order (that order IS state), idempotency keys oldest first (their eviction order, also
// state), fixed key order in every object, no undefined. So two replicas in equal states
// encode to identical bytes whatever history led there, and a follower can compare.
// Bulk data is tuples, not objects: a million sessions would otherwise repeat every key.
//
// importState trusts nothing: a snapshot comes from disk or the network, and a bad one
// must give a clear error, never a state that breaks an invariant later.

import { FsmCore, LockSetWait, LockState, SemState, Session, newCore, type LockFsmOptions } from './state.js';
import { attachSemHolder, enqueue as semEnqueue } from './semaphores.js';
import type { IdempotencyEntry, StoredBinding } from './idempotency.js';
import { isBindingPrincipal } from './commands.js';
import { GRANT_KINDS, parseApplyResult, type ApplyResult, type GrantKind } from './results.js';
import { grantsWithMaxHold } from './holds.js';
import { LOCK_SET_STEPS, isReady, register as registerSet } from './lock-sets.js';
import { MAX_DURATION_MS, MAX_PERMITS, MAX_SET_NAMES, MAX_WAIT_MS, compareStrings, isElectionValue, isIdempotencyKey, isIntIn, isLockName, isOwner, isPrincipal, isRequestDigest, isSessionId } from './names.js';

export const SNAPSHOT_FORMAT = 'raftlock/lock-fsm';
/** 2: shared lock grants and waits, semaphores. 3: elections (the `elections` section) and
 *  the `maxHold` section. 4: each idempotency key's binding (IdemTuple). 5: the
 *  `waitTimes` section (the log time each wait was queued at). 6: waiting lock sets (the
 *  `sets` section, only while a set waits). Older snapshots still restore (no shares, no
 *  semaphores, no elections, no max holds, keys bound to their first result only, waits
 *  queued at the snapshot's log time, no lock sets: docs/lock-fsm.md "Snapshots"). */
export const SNAPSHOT_VERSION = 6;
const READABLE_VERSIONS: readonly number[] = [1, 2, 3, 4, 5, 6];

/** [sessionId, ttlMs, owner, lockDelayMs, principal?]: the 5th element only when the
 *  session has a principal (docs/security.md "Sessions belong to their token"), so states without auth encode exactly as before */
export type SessionTuple = [string, number, string, number] | [string, number, string, number, string];
/** [sessionId, owner, waitMs, since, key?]: since, the index that queued the wait, is
 *  written by every version that has it (a 3-element tuple, from older snapshots, reads
 *  as since 0); key, the Idempotency-Key of the acquire that queued it, only when it had one */
export type WaiterTuple = [string, string, number] | [string, string, number, number] | [string, string, number, number, string]
  /** a shared request (version 2): [sessionId, owner, waitMs, since, key | null, 'shared'] */
  | [string, string, number, number, string | null, 'shared'];
/** a shared grant (version 2): [sessionId, owner, fencingToken], sorted by session id */
export type ShareTuple = [string, string, number];
/** [name, holderSessionId | null, holderOwner | null, fencingToken (0 if free), delayMs (0 if none), waiters, delaySince (0 if none)]:
 *  a 6-element tuple (older snapshots) reads as delaySince 0 */
export type LockTuple = [string, string | null, string | null, number, number, WaiterTuple[]] | [string, string | null, string | null, number, number, WaiterTuple[], number]
  /** version 2 adds the shared grants as an 8th element */
  | [string, string | null, string | null, number, number, WaiterTuple[], number, ShareTuple[]];
/** [name, limit, holders [sessionId, owner, permits, fencingToken] sorted by session id,
 *  waiters [sessionId, owner, permits, waitMs, since, key | null] in queue order] */
export type SemTuple = [string, number, [string, string, number, number][], [string, string, number, number, number, string | null][]];
/** version 3, `maxHold.grants`: [target, name, sessionId, maxHoldMs, grantedAtMs] of every
 *  grant with a max hold, sorted by (target, name, sessionId) */
export type HoldTuple = [GrantKind, string, string, number, number];
/** version 3, `maxHold.waits`: [target, name, sessionId, maxHoldMs] of every queued
 *  request that asked for one, in the same order */
export type HoldWaitTuple = [GrantKind, string, string, number];
/** version 3: the election values of one lock entry (docs/lock-fsm.md "Elections"):
 *  [name, the leader's value (null when the holder is not a campaign's), candidates
 *  [sessionId, value] of the waiters that campaign, in queue order]. Only entries with an
 *  election value are listed, sorted by name; the lock itself is in `locks`. */
export type ElectionTuple = [string, string | null, [string, string][]];
/** version 4: what a key is bound to (idempotency.ts StoredBinding): [command kind,
 *  target, principal | null, digest | null], null parts unknown (an entry of a version
 *  before bindings) */
export type BindingTuple = [string, string, string | null, string | null];
/** [key, atMs, first result] (versions 1–3); version 4 adds the binding, null for a key
 *  restored from a version 1–3 snapshot */
export type IdemTuple = [string, number, ApplyResult] | [string, number, ApplyResult, BindingTuple | null];
/** version 5, `waitTimes`: [target, name, sessionId, queuedAtMs] of every queued wait (lock
 *  waits, campaigns and semaphore waits), sorted by (target, name, sessionId) */
export type WaitTimeTuple = [GrantKind, string, string, number];
/** version 6, `sets`: a waiting lock set (docs/lock-fsm.md "Lock sets"): [sessionId, since,
 *  names in the request's order, 'shared' | null, Idempotency-Key | null], sorted by
 *  (sessionId, since). Each name is either one of its places — the session's waiter of
 *  that lock in `locks`, queued at `since` — or a name the session holds. */
export type SetTuple = [string, number, string[], 'shared' | null, string | null];

export interface StateV1 {
  format: string;
  v: number;
  lastApplied: number;
  lastToken: number;
  sessions: SessionTuple[];
  locks: LockTuple[];
  /** version 2; sorted by name */
  sems?: SemTuple[];
  /** version 3, only when some grant or wait has a max hold (states without one encode
   *  as version 2 did, but for `v`) */
  maxHold?: { grants: HoldTuple[]; waits: HoldWaitTuple[] };
  /** version 3; sorted by name */
  elections?: ElectionTuple[];
  /** version 5, only when some request waits (states without waits encode as version 4
   *  did, but for `v`) */
  waitTimes?: WaitTimeTuple[];
  /** version 6, only while a lock set waits */
  sets?: SetTuple[];
  idem: { nowMs: number; entries: IdemTuple[] };
}

export function exportState(fsm: { readonly core: FsmCore }): StateV1 {
  const c = fsm.core;
  const ids = [...c.sessions.keys()].sort(compareStrings);
  const sessions = ids.map((id): SessionTuple => {
    const s = c.sessions.get(id) as Session;
    return s.principal === '' ? [s.id, s.ttlMs, s.owner, s.lockDelayMs] : [s.id, s.ttlMs, s.owner, s.lockDelayMs, s.principal];
  });
  const locks: LockTuple[] = [];
  // Every lock entry is either held (in the sorted index) or in lock-delay (a free lock
  // with waiters but no delay cannot exist): merge the two sorted streams.
  // (a lock with shares can be in lock-delay too: it is taken once, from the held stream)
  // (version 6: a free lock may also be kept for a waiting lock set's place in its queue)
  const placed = new Set<string>();
  for (const set of c.lockSets) for (const m of set.members) if (!c.held.has(m.lock.name) && !m.lock.inDelay) placed.add(m.lock.name);
  const delayed = [...c.delayed].map((l) => l.name).filter((n) => !c.held.has(n)).concat([...placed]).sort(compareStrings);
  let d = 0;
  const push = (name: string): void => { locks.push(lockTuple(c.locks.get(name) as LockState)); };
  for (const name of c.held.values()) {
    while (d < delayed.length && (delayed[d] as string) < name) push(delayed[d++] as string);
    push(name);
  }
  while (d < delayed.length) push(delayed[d++] as string);
  const entries: IdemTuple[] = [];
  for (const e of c.idem.entries()) entries.push([e.key, e.atMs, e.result, e.binding === null ? null : [e.binding.kind, e.binding.target, e.binding.principal, e.binding.digest]]);
  const sems = [...c.sems.keys()].sort(compareStrings).map((name) => semTuple(c.sems.get(name) as SemState));
  const elections: ElectionTuple[] = [];
  for (const t of locks) {
    const e = electionTuple(c.locks.get(t[0]) as LockState);
    if (e !== null) elections.push(e);
  }
  const idem = { nowMs: c.idem.nowMs, entries };
  const maxHold = maxHoldSection(c);
  const waitTimes = waitTimesSection(c);
  const sets = setsSection(c);
  // fixed key order (the encoding is canonical): optional sections in this order, before idem
  return {
    format: SNAPSHOT_FORMAT, v: SNAPSHOT_VERSION, lastApplied: c.lastApplied, lastToken: c.lastToken, sessions, locks, sems, elections,
    ...(maxHold !== undefined ? { maxHold } : {}),
    ...(waitTimes !== undefined ? { waitTimes } : {}),
    ...(sets !== undefined ? { sets } : {}),
    idem,
  };
}

/** version 5: when each queued wait was queued, in log time (Waiter.queuedAtMs) */
function waitTimesSection(c: FsmCore): WaitTimeTuple[] | undefined {
  const rows: WaitTimeTuple[] = [];
  for (const l of c.locks.values()) for (let w = l.head; w !== null; w = w.next) rows.push(['lock', l.name, w.session.id, w.queuedAtMs]);
  for (const sem of c.sems.values()) for (const w of sem.queue) rows.push(['semaphore', sem.name, w.session.id, w.queuedAtMs]);
  return rows.length === 0 ? undefined : rows.sort(byTargetNameSession);
}

/** version 6: each waiting lock set */
function setsSection(c: FsmCore): SetTuple[] | undefined {
  if (c.lockSets.size === 0) return undefined;
  return [...c.lockSets]
    .sort((a, b) => compareStrings(a.session.id, b.session.id) || a.since - b.since)
    .map((set): SetTuple => [set.session.id, set.since, [...set.names], set.shared ? 'shared' : null, set.key ?? null]);
}

const byTargetNameSession = (a: readonly [string, string, string, ...unknown[]], b: readonly [string, string, string, ...unknown[]]): number =>
  compareStrings(a[0], b[0]) || compareStrings(a[1], b[1]) || compareStrings(a[2], b[2]);

function maxHoldSection(c: FsmCore): StateV1['maxHold'] {
  const grants: HoldTuple[] = grantsWithMaxHold(c).map((h): HoldTuple => [h.target, h.name, h.sessionId, h.maxHoldMs, h.grantedAtMs]).sort(byTargetNameSession);
  const waits: HoldWaitTuple[] = [];
  for (const l of c.locks.values()) for (let w = l.head; w !== null; w = w.next) if (w.maxHoldMs > 0) waits.push(['lock', l.name, w.session.id, w.maxHoldMs]);
  for (const sem of c.sems.values()) for (const w of sem.queue) if (w.maxHoldMs > 0) waits.push(['semaphore', sem.name, w.session.id, w.maxHoldMs]);
  waits.sort(byTargetNameSession);
  return grants.length === 0 && waits.length === 0 ? undefined : { grants, waits };
}

function lockTuple(l: LockState): LockTuple {
  const waiters: WaiterTuple[] = [];
  for (let w = l.head; w !== null; w = w.next) {
    if (w.shared) waiters.push([w.session.id, w.owner, w.waitMs, w.since, w.key ?? null, 'shared']);
    else waiters.push(w.key === undefined ? [w.session.id, w.owner, w.waitMs, w.since] : [w.session.id, w.owner, w.waitMs, w.since, w.key]);
  }
  const shares: ShareTuple[] = l.shares === null ? [] : [...l.shares.values()].map((sh): ShareTuple => [sh.session.id, sh.owner, sh.token]).sort((a, b) => compareStrings(a[0], b[0]));
  if (l.holder === null) return [l.name, null, null, 0, l.delayMs, waiters, l.delaySince, shares];
  return [l.name, l.holder.id, l.holderOwner, l.token, 0, waiters, 0, shares];
}

function electionTuple(l: LockState): ElectionTuple | null {
  const candidates: [string, string][] = [];
  for (let w = l.head; w !== null; w = w.next) if (w.value !== undefined) candidates.push([w.session.id, w.value]);
  if (l.value === null && candidates.length === 0) return null;
  return [l.name, l.value, candidates];
}

function semTuple(sem: SemState): SemTuple {
  const holders = [...sem.holders.values()].map((h): [string, string, number, number] => [h.session.id, h.owner, h.permits, h.token]).sort((a, b) => compareStrings(a[0], b[0]));
  return [sem.name, sem.limit, holders, sem.queue.map((w) => [w.session.id, w.owner, w.permits, w.waitMs, w.since, w.key ?? null])];
}

// ---- import ----

function fail(path: string, what: string): never {
  throw new Error(`corrupt lock-fsm snapshot: ${path} ${what}`);
}

function array(x: unknown, path: string): unknown[] {
  if (!Array.isArray(x)) fail(path, 'must be an array');
  return x;
}

function check<T>(x: unknown, ok: (v: unknown) => v is T, path: string, what: string): T {
  if (!ok(x)) fail(path, `must be ${what}`);
  return x;
}

const intIn = (lo: number, hi: number) => (v: unknown): v is number => isIntIn(v, lo, hi);
const MAXI = Number.MAX_SAFE_INTEGER;

/** Validates a decoded snapshot and builds the state it describes. */
export function importState(x: unknown, options: LockFsmOptions = {}): FsmCore {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) fail('root', 'must be an object');
  const o = x as Record<string, unknown>;
  const known = ['format', 'v', 'lastApplied', 'lastToken', 'sessions', 'locks', 'sems', 'elections', 'maxHold', 'waitTimes', 'sets', 'idem'];
  for (const k of Object.keys(o)) if (!known.includes(k)) fail(k, 'is not a known field');
  if (o['format'] !== SNAPSHOT_FORMAT) fail('format', `must be ${JSON.stringify(SNAPSHOT_FORMAT)}`);
  const v = o['v'];
  if (typeof v !== 'number' || !READABLE_VERSIONS.includes(v)) fail('v', `must be one of ${READABLE_VERSIONS.join(', ')} (the versions this build reads)`);
  const v2 = v >= 2;
  if (!v2 && o['sems'] !== undefined) fail('sems', 'is not a field of version 1');
  if (v < 3 && o['maxHold'] !== undefined) fail('maxHold', `is not a field of version ${v}`);
  if (v < 3 && o['elections'] !== undefined) fail('elections', `is not a field of version ${v}`);
  if (v < 5 && o['waitTimes'] !== undefined) fail('waitTimes', `is not a field of version ${v}`);
  if (v < 6 && o['sets'] !== undefined) fail('sets', `is not a field of version ${v}`);
  const c = newCore(options, LOCK_SET_STEPS);
  c.lastApplied = check(o['lastApplied'], intIn(0, MAXI), 'lastApplied', 'a non-negative integer');
  c.lastToken = check(o['lastToken'], intIn(0, MAXI), 'lastToken', 'a non-negative integer');
  importSessions(c, array(o['sessions'], 'sessions'));
  const tokens: number[] = [];
  importLocks(c, array(o['locks'], 'locks'), v2, tokens, v >= 6);
  if (v2) importSems(c, array(o['sems'], 'sems'), tokens);
  if (o['elections'] !== undefined) importElections(c, array(o['elections'], 'elections'));
  if (v >= 6) importSets(c, o['sets'] === undefined ? undefined : array(o['sets'], 'sets'));
  const sorted = Float64Array.from(tokens).sort();
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) fail('locks', `hold fencing token ${sorted[i]} twice`);
  importIdem(c, o['idem'], v);
  if (o['maxHold'] !== undefined) importMaxHold(c, o['maxHold']);
  importWaitTimes(c, o['waitTimes'], v >= 5);
  return c;
}

/** version 5's waitTimes: one row for every queued wait (and the section only when some
 *  request waits). Older versions have none: their waits count as queued at the
 *  snapshot's log time, which is never earlier than they were (a new leader then ends
 *  them no earlier than wait_ms after the request, possibly later). */
function importWaitTimes(c: FsmCore, x: unknown, required: boolean): void {
  const waits: { queuedAtMs: number }[] = [];
  for (const l of c.locks.values()) for (let w = l.head; w !== null; w = w.next) waits.push(w);
  for (const sem of c.sems.values()) for (const w of sem.queue) waits.push(w);
  for (const w of waits) w.queuedAtMs = c.idem.nowMs;
  if (!required) return;
  if (x === undefined) {
    if (waits.length > 0) fail('waitTimes', `is missing (${waits.length} requests wait)`);
    return;
  }
  const rows = array(x, 'waitTimes');
  if (rows.length === 0) fail('waitTimes', 'is written only when some request waits');
  if (rows.length !== waits.length) fail('waitTimes', `has ${rows.length} rows for ${waits.length} waiting requests`);
  let prev: [string, string, string] | null = null;
  rows.forEach((r, i) => {
    const p = `waitTimes[${i}]`;
    const t = row(r, 4, () => p);
    if (!(GRANT_KINDS as readonly unknown[]).includes(t[0])) fail(`${p}[0]`, `must be one of ${GRANT_KINDS.join(', ')}`);
    const name = check(t[1], isLockName, `${p}[1]`, 'a name');
    const s = sessionRef(c, t[2], () => `${p}[2]`);
    const k: [string, string, string] = [t[0] as string, name, s.id];
    if (prev !== null && byTargetNameSession(prev, k) >= 0) fail(p, 'is out of order or duplicated (sorted by target, name, session id)');
    prev = k;
    const w = t[0] === 'lock' ? s.waits?.get(name) : s.semWaits?.get(name);
    if (w === undefined) fail(p, `names a wait for ${name} that session ${s.id} does not have`);
    w.queuedAtMs = check(t[3], intIn(0, c.idem.nowMs), `${p}[3]`, `a log time in [0, idem.nowMs=${c.idem.nowMs}]`);
  });
}

/** version 3's maxHold section: every row names a grant or wait imported above */
function importMaxHold(c: FsmCore, x: unknown): void {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) fail('maxHold', 'must be an object');
  const o = x as Record<string, unknown>;
  for (const k of Object.keys(o)) if (k !== 'grants' && k !== 'waits') fail(`maxHold.${k}`, 'is not a known field');
  const grants = array(o['grants'], 'maxHold.grants');
  const waits = array(o['waits'], 'maxHold.waits');
  if (grants.length === 0 && waits.length === 0) fail('maxHold', 'is written only when some grant or wait has a max hold');
  const ref = (r: unknown, len: number, p: string): [GrantKind, string, Session, number] => {
    const t = row(r, len, () => p);
    if (!(GRANT_KINDS as readonly unknown[]).includes(t[0])) fail(`${p}[0]`, `must be one of ${GRANT_KINDS.join(', ')}`);
    const name = check(t[1], isLockName, `${p}[1]`, 'a name');
    const s = sessionRef(c, t[2], () => `${p}[2]`);
    return [t[0] as GrantKind, name, s, check(t[3], intIn(1, MAX_DURATION_MS), `${p}[3]`, 'a max hold in ms')];
  };
  let prev: [string, string, string] | null = null;
  const ordered = (k: [string, string, string], p: string): void => {
    if (prev !== null && byTargetNameSession(prev, k) >= 0) fail(p, 'is out of order or duplicated (sorted by target, name, session id)');
    prev = k;
  };
  grants.forEach((r, i) => {
    const p = `maxHold.grants[${i}]`;
    const [target, name, s, maxHoldMs] = ref(r, 5, p);
    ordered([target, name, s.id], p);
    const grantedAtMs = check((r as unknown[])[4], intIn(0, c.idem.nowMs), `${p}[4]`, `a log time in [0, idem.nowMs=${c.idem.nowMs}]`);
    const l = target === 'lock' ? c.locks.get(name) : undefined;
    const g = target === 'lock' ? (l?.holder === s ? l : l?.shares?.get(s.id)) : c.sems.get(name)?.holders.get(s.id);
    if (g === undefined || g === null) fail(p, `names a grant of ${name} that session ${s.id} does not hold`);
    g.maxHoldMs = maxHoldMs;
    g.grantedAtMs = grantedAtMs;
  });
  prev = null;
  waits.forEach((r, i) => {
    const p = `maxHold.waits[${i}]`;
    const [target, name, s, maxHoldMs] = ref(r, 4, p);
    ordered([target, name, s.id], p);
    const w = target === 'lock' ? s.waits?.get(name) : s.semWaits?.get(name);
    if (w === undefined) fail(p, `names a wait for ${name} that session ${s.id} does not have`);
    w.maxHoldMs = maxHoldMs;
  });
}

// The row importers below run a million times for a large state: their checks are inline
// and the error path strings are built only on failure.

function row(x: unknown, len: number, path: () => string): unknown[] {
  if (!Array.isArray(x) || x.length !== len) fail(path(), `must be an array of ${len} elements`);
  return x;
}

function importSessions(c: FsmCore, rows: unknown[]): void {
  let prev = '';
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    const t = row(r, Array.isArray(r) && r.length === 5 ? 5 : 4, () => `sessions[${i}]`);
    const [id, ttlMs, owner, delay, principal] = t;
    if (!isSessionId(id)) fail(`sessions[${i}][0]`, 'must be a session id');
    if (i > 0 && !(prev < id)) fail(`sessions[${i}][0]`, 'is out of order or duplicated (sessions must be sorted by id)');
    prev = id;
    if (!isIntIn(ttlMs, 1, MAX_DURATION_MS)) fail(`sessions[${i}][1]`, 'must be a ttl in ms');
    if (!isOwner(owner)) fail(`sessions[${i}][2]`, 'must be an owner');
    if (!isIntIn(delay, 0, MAX_DURATION_MS)) fail(`sessions[${i}][3]`, 'must be a lock-delay in ms');
    if (t.length === 5 && !isPrincipal(principal)) fail(`sessions[${i}][4]`, 'must be a principal');
    c.addSession(new Session(id, ttlMs, owner, delay, t.length === 5 ? (principal as string) : ''));
  }
}

function sessionRef(c: FsmCore, x: unknown, path: () => string): Session {
  const s = typeof x === 'string' ? c.sessions.get(x) : undefined; // ids were validated on import
  if (s === undefined) fail(path(), `names session ${String(x)}, which is not in sessions`);
  return s;
}

/** tokens: every held token is pushed, checked for repeats by the caller. sets: version 6,
 *  where a free lock may be kept for a lock set's place (its queue heads are checked once
 *  the sets are read, by importSets) */
function importLocks(c: FsmCore, rows: unknown[], v2: boolean, tokens: number[], sets = false): void {
  let prev = '';
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    const t = row(r, v2 ? 8 : Array.isArray(r) && r.length === 6 ? 6 : 7, () => `locks[${i}]`);
    const [name, holder, owner, token, delayMs, waiters] = t;
    const since = t.length >= 7 ? t[6] : 0;
    if (!isIntIn(since, 0, c.lastApplied)) fail(`locks[${i}][6]`, `must be a log index in [0, lastApplied=${c.lastApplied}] (0 if unknown)`);
    if (!isLockName(name)) fail(`locks[${i}][0]`, 'must be a lock name');
    if (i > 0 && !(prev < name)) fail(`locks[${i}][0]`, 'is out of order or duplicated (locks must be sorted by name)');
    prev = name;
    const l = new LockState(name);
    c.locks.set(name, l);
    if (holder !== null) {
      const s = sessionRef(c, holder, () => `locks[${i}][1]`);
      if (!isOwner(owner)) fail(`locks[${i}][2]`, 'must be an owner');
      if (!isIntIn(token, 1, c.lastToken)) fail(`locks[${i}][3]`, `must be a fencing token in [1, lastToken=${c.lastToken}]`);
      tokens.push(token);
      if (delayMs !== 0) fail(`locks[${i}][4]`, 'must be 0: a held lock is not in lock-delay');
      if (since !== 0) fail(`locks[${i}][6]`, 'must be 0: a held lock is not in lock-delay');
      c.attachHolder(l, s, owner, token, false);
    } else {
      if (owner !== null || token !== 0) fail(`locks[${i}]`, 'has an owner or token but no holder');
      const shares = v2 ? t[7] : [];
      if (!Array.isArray(shares)) fail(`locks[${i}][7]`, 'must be an array');
      if (shares.length > 0) importShares(c, l, shares, `locks[${i}][7]`, tokens);
      // a free lock is only stored while in lock-delay (or, version 6, while a lock set has
      // a place in its queue: importSets checks it); one with shares may be in delay
      const placed = sets && shares.length === 0 && delayMs === 0 && since === 0 && Array.isArray(waiters) && waiters.length > 0;
      if (placed) {
        // kept for a lock set's place: checked by importSets
      } else if (shares.length === 0 || delayMs !== 0) {
        if (!isIntIn(delayMs, 1, MAX_DURATION_MS)) fail(`locks[${i}][4]`, 'must be a lock-delay in ms (a free lock is stored only while in delay)');
        c.setDelay(l, delayMs, since);
      } else if (since !== 0) fail(`locks[${i}][6]`, 'must be 0: the lock is not in lock-delay');
    }
    if (v2 && holder !== null && !(Array.isArray(t[7]) && t[7].length === 0)) fail(`locks[${i}][7]`, 'must be empty: an exclusively held lock has no shares');
    if (!Array.isArray(waiters)) fail(`locks[${i}][5]`, 'must be an array');
    if (waiters.length > 0) importWaiters(c, l, waiters, `locks[${i}][5]`, v2);
    if (!sets && l.head !== null && l.holder === null && !l.inDelay && (l.head.shared || l.shares === null)) fail(`locks[${i}][5]`, 'has a head request that should have been granted');
    c.reindex(l);
  }
}

function importShares(c: FsmCore, l: LockState, rows: unknown[], path: string, tokens: number[]): void {
  let prev = '';
  rows.forEach((r, i) => {
    const p = `${path}[${i}]`;
    const t = row(r, 3, () => p);
    const s = sessionRef(c, t[0], () => `${p}[0]`);
    if (i > 0 && !(prev < s.id)) fail(`${p}[0]`, 'is out of order or duplicated (shares are sorted by session id)');
    prev = s.id;
    const owner = check(t[1], isOwner, `${p}[1]`, 'an owner');
    const token = check(t[2], intIn(1, c.lastToken), `${p}[2]`, `a fencing token in [1, lastToken=${c.lastToken}]`);
    tokens.push(token);
    c.attachShare(l, s, owner, token);
  });
}

function importSems(c: FsmCore, rows: unknown[], tokens: number[]): void {
  let prev = '';
  rows.forEach((r, i) => {
    const p = `sems[${i}]`;
    const t = row(r, 4, () => p);
    const name = check(t[0], isLockName, `${p}[0]`, 'a semaphore name');
    if (i > 0 && !(prev < name)) fail(`${p}[0]`, 'is out of order or duplicated (semaphores are sorted by name)');
    prev = name;
    const limit = check(t[1], intIn(1, MAX_PERMITS), `${p}[1]`, `a limit in [1, ${MAX_PERMITS}]`);
    const sem = new SemState(name, limit);
    c.sems.set(name, sem);
    let prevSid = '';
    array(t[2], `${p}[2]`).forEach((hr, j) => {
      const hp = `${p}[2][${j}]`;
      const h = row(hr, 4, () => hp);
      const s = sessionRef(c, h[0], () => `${hp}[0]`);
      if (j > 0 && !(prevSid < s.id)) fail(`${hp}[0]`, 'is out of order or duplicated (holders are sorted by session id)');
      prevSid = s.id;
      const owner = check(h[1], isOwner, `${hp}[1]`, 'an owner');
      const permits = check(h[2], intIn(1, MAX_PERMITS), `${hp}[2]`, 'a permit count');
      const token = check(h[3], intIn(1, c.lastToken), `${hp}[3]`, `a fencing token in [1, lastToken=${c.lastToken}]`);
      tokens.push(token);
      attachSemHolder(c, sem, s, owner, permits, token);
    });
    array(t[3], `${p}[3]`).forEach((wr, j) => {
      const wp = `${p}[3][${j}]`;
      const w = row(wr, 6, () => wp);
      const s = sessionRef(c, w[0], () => `${wp}[0]`);
      if (sem.holders.has(s.id)) fail(`${wp}[0]`, `session ${s.id} both holds and waits for semaphore ${name}`);
      if (s.semWaits?.has(name)) fail(`${wp}[0]`, `session ${s.id} waits twice for semaphore ${name}`);
      const owner = check(w[1], isOwner, `${wp}[1]`, 'an owner');
      const permits = check(w[2], intIn(1, MAX_PERMITS), `${wp}[2]`, 'a permit count'); // may exceed a shrunk limit
      const waitMs = check(w[3], intIn(1, MAX_WAIT_MS), `${wp}[3]`, 'a wait in ms');
      const since = check(w[4], intIn(1, c.lastApplied), `${wp}[4]`, 'a log index in [1, lastApplied]');
      const key = w[5] === null ? undefined : check(w[5], isIdempotencyKey, `${wp}[5]`, 'an idempotency key or null');
      semEnqueue(c, sem, s, owner, permits, waitMs, since, key);
    });
    if (sem.holders.size === 0 && sem.queue.length === 0) fail(p, 'has neither holders nor waiters (an idle semaphore is not stored)');
  });
}

function importElections(c: FsmCore, rows: unknown[]): void {
  let prev = '';
  rows.forEach((r, i) => {
    const p = `elections[${i}]`;
    const t = row(r, 3, () => p);
    const name = check(t[0], isLockName, `${p}[0]`, 'a lock name');
    if (i > 0 && !(prev < name)) fail(`${p}[0]`, 'is out of order or duplicated (elections are sorted by name)');
    prev = name;
    const l = c.locks.get(name);
    if (l === undefined) fail(`${p}[0]`, `names lock ${name}, which is not in locks`);
    if (t[1] !== null) {
      const value = check(t[1], isElectionValue, `${p}[1]`, 'an election value or null');
      if (l.holder === null) fail(`${p}[1]`, `is a leader's value, but lock ${name} has no exclusive holder`);
      c.setLeaderValue(l, value);
    }
    const candidates = array(t[2], `${p}[2]`);
    // candidates come in queue order: walk the queue once alongside them
    let w = l.head;
    candidates.forEach((cr, j) => {
      const cp = `${p}[2][${j}]`;
      const ct = row(cr, 2, () => cp);
      const sid = check(ct[0], isSessionId, `${cp}[0]`, 'a session id');
      while (w !== null && w.session.id !== sid) w = w.next;
      if (w === null) fail(`${cp}[0]`, `names no waiter of lock ${name} after the previous candidate (candidates are in queue order)`);
      if (w.shared) fail(`${cp}[0]`, `names a shared request of lock ${name} (a campaign is exclusive)`);
      w.value = check(ct[1], isElectionValue, `${cp}[1]`, 'an election value');
      w = w.next;
    });
    if (t[1] === null && candidates.length === 0) fail(p, 'has neither a leader value nor candidates (such an entry is not stored)');
  });
}

function importWaiters(c: FsmCore, l: LockState, rows: unknown[], path: string, v2: boolean): void {
  rows.forEach((r, i) => {
    const p = `${path}[${i}]`;
    const t = row(r, Array.isArray(r) && (r.length === 3 || r.length === 5 || (v2 && r.length === 6)) ? r.length : 4, () => p);
    const s = sessionRef(c, t[0], () => `${p}[0]`);
    if (s === l.holder || l.shares?.has(s.id)) fail(`${p}[0]`, `session ${s.id} both holds and waits for ${l.name}`);
    if (s.waits?.has(l.name)) fail(`${p}[0]`, `session ${s.id} waits twice for ${l.name}`);
    const owner = check(t[1], isOwner, `${p}[1]`, 'an owner');
    const waitMs = check(t[2], intIn(1, MAX_WAIT_MS), `${p}[2]`, 'a wait in ms');
    const since = t.length >= 4 ? check(t[3], intIn(0, c.lastApplied), `${p}[3]`, 'a log index in [0, lastApplied] (0 if unknown)') : 0;
    if (t.length === 6 && t[5] !== 'shared') fail(`${p}[5]`, 'must be "shared"');
    const key = t.length === 6 && t[4] === null ? undefined : t.length >= 5 ? check(t[4], isIdempotencyKey, `${p}[4]`, 'an idempotency key') : undefined;
    c.enqueue(l, s, owner, waitMs, since, key, t.length === 6);
  });
}

/** version 6's sets: each row's places are waiters read above (queued at its `since`), its
 *  other names grants of its session; then every queue's head is checked as importLocks
 *  checks it for older versions, a set's place by the whole set (docs/lock-fsm.md "Lock sets") */
function importSets(c: FsmCore, section: unknown[] | undefined): void {
  if (section?.length === 0) fail('sets', 'is written only while a lock set waits');
  const rows = section ?? [];
  let prev: [string, number] | null = null;
  rows.forEach((r, i) => {
    const p = `sets[${i}]`;
    const t = row(r, 5, () => p);
    const s = sessionRef(c, t[0], () => `${p}[0]`);
    const since = check(t[1], intIn(1, c.lastApplied), `${p}[1]`, 'a log index in [1, lastApplied]');
    if (prev !== null && (compareStrings(prev[0], s.id) || prev[1] - since) >= 0) fail(p, 'is out of order or duplicated (sorted by session id, then since)');
    prev = [s.id, since];
    const names = array(t[2], `${p}[2]`);
    if (names.length < 1 || names.length > MAX_SET_NAMES || !names.every(isLockName) || new Set(names).size !== names.length) fail(`${p}[2]`, `must be 1–${MAX_SET_NAMES} distinct lock names`);
    if (t[3] !== null && t[3] !== 'shared') fail(`${p}[3]`, 'must be "shared" or null');
    const shared = t[3] === 'shared';
    const key = t[4] === null ? undefined : check(t[4], isIdempotencyKey, `${p}[4]`, 'an idempotency key or null');
    const held: string[] = [];
    const members = [];
    for (const name of names as string[]) {
      const w = s.waits?.get(name);
      if (w !== undefined && w.since === since) {
        if (w.set !== null) fail(`${p}[2]`, `names the place of ${s.id} in the queue of ${name}, which another set claims`);
        if (w.shared !== shared || w.key !== undefined || w.value !== undefined) fail(`${p}[2]`, `the waiter of ${s.id} on ${name} is not a place of this set (mode, key or election value)`);
        members.push(w);
        continue;
      }
      const l = c.locks.get(name);
      if (!(l?.holder === s || (shared && l?.shares?.has(s.id) === true))) fail(`${p}[2]`, `${name} is neither a place of this set nor held by ${s.id} in a mode that answers it`);
      held.push(name);
    }
    if (members.length === 0) fail(p, 'has no place in any queue (a set whose names are all held is granted, not kept)');
    const set = new LockSetWait(s, names as string[], held.sort(compareStrings), shared, since, key);
    for (const w of members) {
      w.set = set;
      set.members.push(w);
    }
    registerSet(c, set);
  });
  for (const l of c.locks.values()) {
    const h = l.head;
    if (h === null || l.holder !== null || l.inDelay) continue;
    if (h.set !== null ? isReady(h.set) : h.shared || l.shares === null) fail(`locks (${l.name})`, 'has a head request that should have been granted');
  }
}

function importIdem(c: FsmCore, x: unknown, v: number): void {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) fail('idem', 'must be an object');
  const o = x as Record<string, unknown>;
  for (const k of Object.keys(o)) if (k !== 'nowMs' && k !== 'entries') fail(`idem.${k}`, 'is not a known field');
  const nowMs = check(o['nowMs'], intIn(0, MAXI), 'idem.nowMs', 'a non-negative integer');
  const seen = new Set<string>();
  let prevAt = 0;
  const entries: IdempotencyEntry[] = array(o['entries'], 'idem.entries').map((r, i) => {
    const p = `idem.entries[${i}]`;
    const t = row(r, v >= 4 ? 4 : 3, () => p);
    const key = check(t[0], isIdempotencyKey, `${p}[0]`, 'an idempotency key');
    if (seen.has(key)) fail(`${p}[0]`, 'repeats a key');
    seen.add(key);
    const atMs = check(t[1], intIn(prevAt, nowMs), `${p}[1]`, `a time in [${prevAt}, nowMs] (entries are oldest first)`);
    prevAt = atMs;
    const binding = v >= 4 && t[3] !== null ? importBinding(t[3], `${p}[3]`) : null;
    return { key, atMs, result: parseApplyResult(t[2], `${p}[2]`), binding };
  });
  c.idem.load(nowMs, entries);
}

/** version 4: [kind, target, principal | null, digest | null]. The kind is checked for its
 *  shape only (a command kind's name): it is compared, never dispatched on. */
function importBinding(x: unknown, p: string): StoredBinding {
  const t = row(x, 4, () => p);
  const kind = check(t[0], isKindName, `${p}[0]`, 'a command kind');
  const target = check(t[1], isTarget, `${p}[1]`, "a lock name, a session id or ''");
  const principal = t[2] === null ? null : check(t[2], isBindingPrincipal, `${p}[2]`, "a principal, '' or null");
  const digest = t[3] === null ? null : check(t[3], isRequestDigest, `${p}[3]`, 'a request digest (32–64 lowercase hex digits) or null');
  return { kind: kind as StoredBinding['kind'], target, principal, digest };
}

const isKindName = (x: unknown): x is string => typeof x === 'string' && /^[a-z][A-Za-z]{0,39}$/.test(x);
const isTarget = (x: unknown): x is string => x === '' || isLockName(x) || isSessionId(x);
