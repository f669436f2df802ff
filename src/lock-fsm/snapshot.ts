// Deterministic snapshot of the lock FSM. exportState gives a plain JSON/msgpack-able
// value in canonical form: sessions sorted by id, locks sorted by name, waiters in queue
// order (that order IS state), idempotency keys oldest first (their eviction order, also
// state), fixed key order in every object, no undefined. So two replicas in equal states
// encode to identical bytes whatever history led there, and a follower can compare.
// Bulk data is tuples, not objects: a million sessions would otherwise repeat every key.
//
// importState trusts nothing: a snapshot comes from disk or the network, and a bad one
// must give a clear error, never a state that breaks an invariant later.

import { FsmCore, LockState, Session, newCore, type LockFsmOptions } from './state.js';
import type { IdempotencyEntry } from './idempotency.js';
import { parseApplyResult, type ApplyResult } from './results.js';
import { MAX_DURATION_MS, MAX_WAIT_MS, compareStrings, isIdempotencyKey, isIntIn, isLockName, isOwner, isPrincipal, isSessionId } from './names.js';

export const SNAPSHOT_FORMAT = 'raftlock/lock-fsm';
export const SNAPSHOT_VERSION = 1;

/** [sessionId, ttlMs, owner, lockDelayMs, principal?]: the 5th element only when the
 *  session has a principal (issue 10), so states without auth encode exactly as before */
export type SessionTuple = [string, number, string, number] | [string, number, string, number, string];
/** [sessionId, owner, waitMs, since, key?]: since, the index that queued the wait, is
 *  written by every version that has it (a 3-element tuple, from older snapshots, reads
 *  as since 0); key, the Idempotency-Key of the acquire that queued it, only when it had one */
export type WaiterTuple = [string, string, number] | [string, string, number, number] | [string, string, number, number, string];
/** [name, holderSessionId | null, holderOwner | null, fencingToken (0 if free), delayMs (0 if none), waiters, delaySince (0 if none)]:
 *  a 6-element tuple (older snapshots) reads as delaySince 0 */
export type LockTuple = [string, string | null, string | null, number, number, WaiterTuple[]] | [string, string | null, string | null, number, number, WaiterTuple[], number];
/** [key, atMs, first result] */
export type IdemTuple = [string, number, ApplyResult];

export interface StateV1 {
  format: string;
  v: number;
  lastApplied: number;
  lastToken: number;
  sessions: SessionTuple[];
  locks: LockTuple[];
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
  const delayed = [...c.delayed].map((l) => l.name).sort(compareStrings);
  let d = 0;
  const push = (name: string): void => { locks.push(lockTuple(c.locks.get(name) as LockState)); };
  for (const name of c.held.values()) {
    while (d < delayed.length && (delayed[d] as string) < name) push(delayed[d++] as string);
    push(name);
  }
  while (d < delayed.length) push(delayed[d++] as string);
  const entries: IdemTuple[] = [];
  for (const e of c.idem.entries()) entries.push([e.key, e.atMs, e.result]);
  return { format: SNAPSHOT_FORMAT, v: SNAPSHOT_VERSION, lastApplied: c.lastApplied, lastToken: c.lastToken, sessions, locks, idem: { nowMs: c.idem.nowMs, entries } };
}

function lockTuple(l: LockState): LockTuple {
  const waiters: WaiterTuple[] = [];
  for (let w = l.head; w !== null; w = w.next) waiters.push(w.key === undefined ? [w.session.id, w.owner, w.waitMs, w.since] : [w.session.id, w.owner, w.waitMs, w.since, w.key]);
  if (l.holder === null) return [l.name, null, null, 0, l.delayMs, waiters, l.delaySince];
  return [l.name, l.holder.id, l.holderOwner, l.token, 0, waiters, 0];
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
  const known = ['format', 'v', 'lastApplied', 'lastToken', 'sessions', 'locks', 'idem'];
  for (const k of Object.keys(o)) if (!known.includes(k)) fail(k, 'is not a known field');
  if (o['format'] !== SNAPSHOT_FORMAT) fail('format', `must be ${JSON.stringify(SNAPSHOT_FORMAT)}`);
  if (o['v'] !== SNAPSHOT_VERSION) fail('v', `must be ${SNAPSHOT_VERSION} (this build reads version ${SNAPSHOT_VERSION} only)`);
  const c = newCore(options);
  c.lastApplied = check(o['lastApplied'], intIn(0, MAXI), 'lastApplied', 'a non-negative integer');
  c.lastToken = check(o['lastToken'], intIn(0, MAXI), 'lastToken', 'a non-negative integer');
  importSessions(c, array(o['sessions'], 'sessions'));
  importLocks(c, array(o['locks'], 'locks'));
  importIdem(c, o['idem']);
  return c;
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

function importLocks(c: FsmCore, rows: unknown[]): void {
  let prev = '';
  const tokens = new Float64Array(rows.length); // held tokens, checked for repeats at the end
  let nTokens = 0;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    const t = row(r, Array.isArray(r) && r.length === 6 ? 6 : 7, () => `locks[${i}]`);
    const [name, holder, owner, token, delayMs, waiters] = t;
    const since = t.length === 7 ? t[6] : 0;
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
      tokens[nTokens++] = token;
      if (delayMs !== 0) fail(`locks[${i}][4]`, 'must be 0: a held lock is not in lock-delay');
      if (since !== 0) fail(`locks[${i}][6]`, 'must be 0: a held lock is not in lock-delay');
      c.attachHolder(l, s, owner, token, false);
    } else {
      if (owner !== null || token !== 0) fail(`locks[${i}]`, 'has an owner or token but no holder');
      // a free lock is only stored while in lock-delay
      if (!isIntIn(delayMs, 1, MAX_DURATION_MS)) fail(`locks[${i}][4]`, 'must be a lock-delay in ms (a free lock is stored only while in delay)');
      c.setDelay(l, delayMs, since);
    }
    if (!Array.isArray(waiters)) fail(`locks[${i}][5]`, 'must be an array');
    if (waiters.length > 0) importWaiters(c, l, waiters, `locks[${i}][5]`);
  }
  const sorted = tokens.subarray(0, nTokens).sort();
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) fail('locks', `hold fencing token ${sorted[i]} twice`);
}

function importWaiters(c: FsmCore, l: LockState, rows: unknown[], path: string): void {
  rows.forEach((r, i) => {
    const p = `${path}[${i}]`;
    const t = row(r, Array.isArray(r) && (r.length === 3 || r.length === 5) ? r.length : 4, () => p);
    const s = sessionRef(c, t[0], () => `${p}[0]`);
    if (s === l.holder) fail(`${p}[0]`, `session ${s.id} both holds and waits for ${l.name}`);
    if (s.waits?.has(l.name)) fail(`${p}[0]`, `session ${s.id} waits twice for ${l.name}`);
    const owner = check(t[1], isOwner, `${p}[1]`, 'an owner');
    const waitMs = check(t[2], intIn(1, MAX_WAIT_MS), `${p}[2]`, 'a wait in ms');
    const since = t.length >= 4 ? check(t[3], intIn(0, c.lastApplied), `${p}[3]`, 'a log index in [0, lastApplied] (0 if unknown)') : 0;
    const key = t.length === 5 ? check(t[4], isIdempotencyKey, `${p}[4]`, 'an idempotency key') : undefined;
    c.enqueue(l, s, owner, waitMs, since, key);
  });
}

function importIdem(c: FsmCore, x: unknown): void {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) fail('idem', 'must be an object');
  const o = x as Record<string, unknown>;
  for (const k of Object.keys(o)) if (k !== 'nowMs' && k !== 'entries') fail(`idem.${k}`, 'is not a known field');
  const nowMs = check(o['nowMs'], intIn(0, MAXI), 'idem.nowMs', 'a non-negative integer');
  const seen = new Set<string>();
  let prevAt = 0;
  const entries: IdempotencyEntry[] = array(o['entries'], 'idem.entries').map((r, i) => {
    const p = `idem.entries[${i}]`;
    const t = row(r, 3, () => p);
    const key = check(t[0], isIdempotencyKey, `${p}[0]`, 'an idempotency key');
    if (seen.has(key)) fail(`${p}[0]`, 'repeats a key');
    seen.add(key);
    const atMs = check(t[1], intIn(prevAt, nowMs), `${p}[1]`, `a time in [${prevAt}, nowMs] (entries are oldest first)`);
    prevAt = atMs;
    return { key, atMs, result: parseApplyResult(t[2], `${p}[2]`) };
  });
  c.idem.load(nowMs, entries);
}
