// The lock FSM's log vocabulary: every state change is one of these commands, wrapped in
// an Envelope and committed through Raft. Time-based decisions (expiry, end of lock-delay,
// wait timeouts) are commands too (docs/architecture.md "Rules", rule 3), so apply() never
// reads a clock and every replica reaches the same state from the same log.
//
// The msgpack codec lives outside this pure folder (src/server/app/command-codec.ts); after decoding it MUST call
// parseEnvelope, which checks every field and rebuilds the value with only known fields.

import { GRANT_KINDS, type GrantKind } from './results.js';
import {
  MAX_DURATION_MS, MAX_PERMITS, MAX_SET_NAMES, MAX_WAIT_MS, isElectionValue, isIdempotencyKey, isIntIn, isLockName, isOwner, isPrincipal, isRequestDigest, isSessionId,
} from './names.js';

/** Parameters of a session opened by the same entry as an acquire (acquire without session_id). */
export interface NewSessionSpec {
  ttlMs: number;
  owner: string;
  lockDelayMs: number;
  /** the API token that opens it (docs/security.md "Sessions belong to their token"); absent when auth is off */
  principal?: string;
}

export type Command =
  /** sessionId is drawn by the leader before proposing (never by apply: it must be
   *  identical on every replica, so it has to be in the log). */
  /** principal: the API token that opens it (docs/security.md "Sessions belong to their token"), absent when auth is off. It is
   *  part of the replicated state so every leader enforces the same ownership and the
   *  same per-token session limit. */
  | { kind: 'openSession'; sessionId: string; ttlMs: number; owner: string; lockDelayMs: number; principal?: string }
  /** actor (on closeSession, acquire with an existing session, release): the caller's
   *  principal when it may act only on its own sessions. The FSM refuses with
   *  permission_denied when the session was opened by another principal. The leader
   *  leaves it out for callers with `admin` (or when auth is off). Checked at apply time,
   *  so no race with the session's state can let it through. */
  | { kind: 'closeSession'; sessionId: string; actor?: string }
  /** waitMs 0: fail at once when held. newSession: open sessionId with these parameters
   *  and acquire, atomically (nothing is created if the acquire fails). owner: the
   *  holder's owner label for this lock; defaults to the session's owner. */
  /** maxHoldMs: the grant is freed that long after it was made, even while its session
   *  lives (the lessor's expireHold; docs/lock-fsm.md "Revocation and maximum hold") */
  | { kind: 'acquire'; name: string; sessionId: string; waitMs: number; owner?: string; newSession?: NewSessionSpec; actor?: string; mode?: 'shared'; maxHoldMs?: number }
  /** a lock set (docs/lock-fsm.md "Lock sets"): every name granted together in this apply,
   *  or one place at this index in the queue of every name it needs, or nothing. names:
   *  1–64 distinct lock names, in the request's order (the answer's order). A name the
   *  session holds is answered with its existing token. newSession, owner, actor, mode and
   *  maxHoldMs as for acquire (maxHoldMs per name). */
  | { kind: 'acquireAll'; names: string[]; sessionId: string; waitMs: number; owner?: string; newSession?: NewSessionSpec; actor?: string; mode?: 'shared'; maxHoldMs?: number }
  /** releases each of `names` the session holds (in name order, so the tokens their next
   *  waiters get do not depend on the request's order) and ends its waits on them (a
   *  waiting set as a whole) */
  | { kind: 'releaseAll'; names: string[]; sessionId: string; actor?: string }
  /** semaphores (docs/lock-fsm.md "Semaphores"): take `permits` of `limit`; newSession,
   *  owner and actor as for acquire */
  | { kind: 'semAcquire'; name: string; sessionId: string; limit: number; permits: number; waitMs: number; owner?: string; newSession?: NewSessionSpec; actor?: string; maxHoldMs?: number }
  /** an administrator takes grants away: sessionId's grant of `name`, or every grant of
   *  it; no lock-delay, the next waiters are served in the same apply. The API checks the
   *  `admin` right before proposing it. */
  | { kind: 'revoke'; target: GrantKind; name: string; sessionId?: string }
  /** proposed by the leader's lessor when a grant's max hold has run out. It names the
   *  grant by its fencing token (tokens are never reused): a no-op once that grant is
   *  over, so a stale or duplicated copy cannot end a later grant of the same session */
  | { kind: 'expireHold'; target: GrantKind; name: string; sessionId: string; fencingToken: number }
  /** settles: as for release (the service's withdrawal completing the client's release) */
  | { kind: 'semRelease'; name: string; sessionId: string; actor?: string; settles?: string }
  /** leader election (docs/lock-fsm.md "Elections"): an exclusive acquire of the lock
   *  `name` whose grant publishes `value`; it waits in the lock's FIFO queue, takes its
   *  token from the one sequence and ends with its session, exactly as an acquire.
   *  newSession, owner and actor as for acquire. */
  | { kind: 'campaign'; name: string; sessionId: string; value: string; waitMs: number; owner?: string; newSession?: NewSessionSpec; actor?: string; maxHoldMs?: number }
  /** the leader replaces its value; anyone else gets not_holder */
  | { kind: 'proclaim'; name: string; sessionId: string; value: string; actor?: string }
  /** the leader steps down (the next candidate leads in the same apply), or a waiting
   *  candidate withdraws; anyone else gets not_holder */
  | { kind: 'resign'; name: string; sessionId: string; actor?: string }
  /** resize: shrinking never takes permits away */
  | { kind: 'semSetLimit'; name: string; limit: number }
  /** the lessor's semaphore wait timeout; since as for cancelWait (always present) */
  | { kind: 'semCancelWait'; name: string; sessionId: string; since: number }
  /** fencingToken: when given, must match the current grant (a stale holder is refused). */
  /** settles: the Idempotency-Key of the client's own release that this one completes (the
   *  service's withdrawal of a wait whose grant won the race, docs/api.md "Release"): when
   *  this release succeeds, that key's stored `not_holder` becomes this `released`, so a
   *  retry answers as the first attempt did */
  | { kind: 'release'; name: string; sessionId: string; fencingToken?: number; actor?: string; settles?: string }
  /** since: the log index at which the wait it ends began (Waiter.since); a no-op when
   *  that wait is gone, so a stale copy cannot end a later wait of the same session.
   *  Absent (entries written before waits had an identity): ends the current wait
   *  (docs/lock-fsm.md "Lessor commands name what they end"). */
  | { kind: 'cancelWait'; name: string; sessionId: string; since?: number }
  /** proposed by the leader's lessor; a no-op when the session is already gone (session
   *  ids are never reused, so the id alone names one session: docs/lock-fsm.md) */
  | { kind: 'expireSession'; sessionId: string }
  /** proposed by the leader's lessor when a lock's lock-delay has run out. since: the log
   *  index at which that delay began; a no-op when it is over (absent: legacy, as cancelWait) */
  | { kind: 'endLockDelay'; name: string; since?: number }
  /** the entry a new leader commits at the start of its term; applies as a no-op */
  | { kind: 'barrier'; term: number };

export type CommandKind = Command['kind'];

/**
 * What an Idempotency-Key is bound to besides the command's own kind and name
 * (docs/lock-fsm.md "Idempotency"): the key answers a retry only when all of them match.
 *
 * The digest is computed by the node, not here (src/server/leader/request-digest.ts: SHA-256 of the
 * request's canonical form), and travels in the envelope. The state machine could not
 * compute it: it sees the resolved command — a session id the leader drew for this
 * attempt, the node's default ttl — while a retry must match on the request as the
 * client sent it. Carried as a value, it keeps apply() free of crypto and every replica
 * compares the same bytes.
 */
export interface KeyBinding {
  /** the principal (API token name) that sent the request; '' when auth is off (anonymous) */
  principal: string;
  /** 32–64 lowercase hex digits: the digest of the request's canonical form */
  digest: string;
}

export interface Envelope {
  /** the proposing leader's log time (ms): only used to age idempotency keys. A leader
   *  advances it by its monotonic clock, never by its wall clock (src/server/leader/log-clock.ts,
   *  docs/lock-fsm.md "Log time"); entries of older versions carry a wall-clock value. */
  atMs: number;
  /** the client's Idempotency-Key header; a retry with the same key gets the first result */
  idempotencyKey?: string;
  /** the request the key is bound to (only with idempotencyKey). Entries of versions
   *  before bindings lack it: their key is bound to the command's kind and name only. */
  keyBinding?: KeyBinding;
  cmd: Command;
}

/** Thrown by parseEnvelope; `path` names the offending field (e.g. "cmd.ttlMs"). */
export class InvalidCommandError extends Error {
  constructor(readonly path: string, detail: string) {
    super(`invalid lock command: ${path} ${detail}`);
    this.name = 'InvalidCommandError';
  }
}

type Obj = Record<string, unknown>;

function isPlainObject(x: unknown): x is Obj {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return false;
  const proto: unknown = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/** Reject fields this version does not know: a newer writer's field would be silently lost. */
function checkKeys(o: Obj, path: string, allowed: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) throw new InvalidCommandError(`${path}.${k}`, 'is not a known field');
  }
}

/** undefined (or absent) means "not given"; null is a type error, not a default. */
function has(o: Obj, k: string): boolean {
  return o[k] !== undefined;
}

function str(o: Obj, path: string, k: string, ok: (x: unknown) => boolean, what: string): string {
  const v = o[k];
  if (!ok(v)) throw new InvalidCommandError(`${path}.${k}`, `must be ${what}, got ${describe(v)}`);
  return v as string;
}

function int(o: Obj, path: string, k: string, lo: number, hi: number): number {
  const v = o[k];
  if (!isIntIn(v, lo, hi)) throw new InvalidCommandError(`${path}.${k}`, `must be an integer in [${lo}, ${hi}], got ${describe(v)}`);
  // + 0 turns -0 into 0, as msgpack does: the canonical copy is what every member decodes
  return v + 0;
}

function describe(v: unknown): string {
  if (typeof v === 'string') return v.length > 40 ? `a string of length ${v.length}` : JSON.stringify(v);
  if (typeof v === 'number') return String(v);
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}

const NAME = 'a lock name (1–256 chars of [A-Za-z0-9._:/-])';
const SID = 'a session id (1–128 chars of [A-Za-z0-9._~-])';
const OWNER = 'an owner (≤256 bytes of well-formed UTF-8)';
const VALUE = 'an election value (≤4096 bytes of well-formed UTF-8)';
const PRINCIPAL = 'a principal (1–128 chars of [A-Za-z0-9._:@-])';
const MAXD = MAX_DURATION_MS;

function parseNewSession(x: unknown, path: string): NewSessionSpec {
  if (!isPlainObject(x)) throw new InvalidCommandError(path, `must be an object, got ${describe(x)}`);
  checkKeys(x, path, ['ttlMs', 'owner', 'lockDelayMs', 'principal']);
  const spec: NewSessionSpec = { ttlMs: int(x, path, 'ttlMs', 1, MAXD), owner: str(x, path, 'owner', isOwner, OWNER), lockDelayMs: int(x, path, 'lockDelayMs', 0, MAXD) };
  if (has(x, 'principal')) spec.principal = str(x, path, 'principal', isPrincipal, PRINCIPAL);
  return spec;
}

function grantKind(x: Obj, p: string): GrantKind {
  const v = x['target'];
  if (typeof v !== 'string' || !(GRANT_KINDS as readonly string[]).includes(v)) throw new InvalidCommandError(`${p}.target`, `must be one of ${GRANT_KINDS.join(', ')}, got ${describe(v)}`);
  return v as GrantKind;
}

/** a lock set's names: 1–64 distinct lock names, order kept (it is the answer's order) */
function names(x: Obj, p: string): string[] {
  const v = x['names'];
  if (!Array.isArray(v) || v.length < 1 || v.length > MAX_SET_NAMES) throw new InvalidCommandError(`${p}.names`, `must be an array of 1–${MAX_SET_NAMES} lock names, got ${describe(v)}${Array.isArray(v) ? ` of ${v.length}` : ''}`);
  const out: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < v.length; i++) {
    const n: unknown = v[i];
    if (!isLockName(n)) throw new InvalidCommandError(`${p}.names[${i}]`, `must be ${NAME}, got ${describe(n)}`);
    if (seen.has(n)) throw new InvalidCommandError(`${p}.names[${i}]`, `repeats ${JSON.stringify(n)} (names must be distinct)`);
    seen.add(n);
    out.push(n);
  }
  return out;
}

/** the optional `actor` field (closeSession, acquire, release) */
function withActor<C extends { actor?: string }>(cmd: C, x: Obj, p: string): C {
  if (has(x, 'actor')) cmd.actor = str(x, p, 'actor', isPrincipal, PRINCIPAL);
  return cmd;
}

/** the fields acquire and acquireAll share after their name(s): owner, a new session, the
 *  actor, mode and max hold */
function acquireOptions<C extends Extract<Command, { kind: 'acquire' | 'acquireAll' }>>(cmd: C, x: Obj, p: string): C {
  if (has(x, 'owner')) cmd.owner = str(x, p, 'owner', isOwner, OWNER);
  if (has(x, 'newSession')) cmd.newSession = parseNewSession(x['newSession'], `${p}.newSession`);
  withActor(cmd, x, p);
  // a new session is the actor's own by construction: an actor there is a writer bug
  if (cmd.newSession !== undefined && cmd.actor !== undefined) throw new InvalidCommandError(`${p}.actor`, 'must not be given with newSession (set newSession.principal)');
  // only 'shared' is written: an exclusive acquire encodes as it did before modes
  if (has(x, 'mode') && x['mode'] !== 'shared') throw new InvalidCommandError(`${p}.mode`, `must be "shared" when present, got ${describe(x['mode'])}`);
  if (has(x, 'mode')) cmd.mode = 'shared';
  if (has(x, 'maxHoldMs')) cmd.maxHoldMs = int(x, p, 'maxHoldMs', 1, MAXD);
  return cmd;
}

/** Validates one command and rebuilds it with a fixed key order (so re-encoding it is canonical). */
export function parseCommand(x: unknown, path = 'cmd'): Command {
  if (!isPlainObject(x)) throw new InvalidCommandError(path, `must be an object, got ${describe(x)}`);
  const p = path;
  switch (x['kind']) {
    case 'openSession': {
      checkKeys(x, p, ['kind', 'sessionId', 'ttlMs', 'owner', 'lockDelayMs', 'principal']);
      const cmd: Command = { kind: 'openSession', sessionId: str(x, p, 'sessionId', isSessionId, SID), ttlMs: int(x, p, 'ttlMs', 1, MAXD), owner: str(x, p, 'owner', isOwner, OWNER), lockDelayMs: int(x, p, 'lockDelayMs', 0, MAXD) };
      if (has(x, 'principal')) cmd.principal = str(x, p, 'principal', isPrincipal, PRINCIPAL);
      return cmd;
    }
    case 'closeSession':
      checkKeys(x, p, ['kind', 'sessionId', 'actor']);
      return withActor<Extract<Command, { kind: 'closeSession' }>>({ kind: 'closeSession', sessionId: str(x, p, 'sessionId', isSessionId, SID) }, x, p);
    case 'acquire': {
      checkKeys(x, p, ['kind', 'name', 'sessionId', 'waitMs', 'owner', 'newSession', 'actor', 'mode', 'maxHoldMs']);
      return acquireOptions({ kind: 'acquire', name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID), waitMs: int(x, p, 'waitMs', 0, MAX_WAIT_MS) }, x, p);
    }
    case 'acquireAll': {
      checkKeys(x, p, ['kind', 'names', 'sessionId', 'waitMs', 'owner', 'newSession', 'actor', 'mode', 'maxHoldMs']);
      return acquireOptions({ kind: 'acquireAll', names: names(x, p), sessionId: str(x, p, 'sessionId', isSessionId, SID), waitMs: int(x, p, 'waitMs', 0, MAX_WAIT_MS) }, x, p);
    }
    case 'releaseAll':
      checkKeys(x, p, ['kind', 'names', 'sessionId', 'actor']);
      return withActor<Extract<Command, { kind: 'releaseAll' }>>({ kind: 'releaseAll', names: names(x, p), sessionId: str(x, p, 'sessionId', isSessionId, SID) }, x, p);
    case 'semAcquire': {
      checkKeys(x, p, ['kind', 'name', 'sessionId', 'limit', 'permits', 'waitMs', 'owner', 'newSession', 'actor', 'maxHoldMs']);
      const cmd: Command = { kind: 'semAcquire', name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID), limit: int(x, p, 'limit', 1, MAX_PERMITS), permits: int(x, p, 'permits', 1, MAX_PERMITS), waitMs: int(x, p, 'waitMs', 0, MAX_WAIT_MS) };
      if (has(x, 'owner')) cmd.owner = str(x, p, 'owner', isOwner, OWNER);
      if (has(x, 'newSession')) cmd.newSession = parseNewSession(x['newSession'], `${p}.newSession`);
      withActor(cmd, x, p);
      if (cmd.newSession !== undefined && cmd.actor !== undefined) throw new InvalidCommandError(`${p}.actor`, 'must not be given with newSession (set newSession.principal)');
      if (has(x, 'maxHoldMs')) cmd.maxHoldMs = int(x, p, 'maxHoldMs', 1, MAXD);
      return cmd;
    }
    case 'revoke': {
      checkKeys(x, p, ['kind', 'target', 'name', 'sessionId']);
      const cmd: Command = { kind: 'revoke', target: grantKind(x, p), name: str(x, p, 'name', isLockName, NAME) };
      if (has(x, 'sessionId')) cmd.sessionId = str(x, p, 'sessionId', isSessionId, SID);
      return cmd;
    }
    case 'expireHold':
      checkKeys(x, p, ['kind', 'target', 'name', 'sessionId', 'fencingToken']);
      return { kind: 'expireHold', target: grantKind(x, p), name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID), fencingToken: int(x, p, 'fencingToken', 1, Number.MAX_SAFE_INTEGER) };
    case 'campaign': {
      checkKeys(x, p, ['kind', 'name', 'sessionId', 'value', 'waitMs', 'owner', 'newSession', 'actor', 'maxHoldMs']);
      const cmd: Command = { kind: 'campaign', name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID), value: str(x, p, 'value', isElectionValue, VALUE), waitMs: int(x, p, 'waitMs', 0, MAX_WAIT_MS) };
      if (has(x, 'maxHoldMs')) cmd.maxHoldMs = int(x, p, 'maxHoldMs', 1, MAXD);
      if (has(x, 'owner')) cmd.owner = str(x, p, 'owner', isOwner, OWNER);
      if (has(x, 'newSession')) cmd.newSession = parseNewSession(x['newSession'], `${p}.newSession`);
      withActor(cmd, x, p);
      if (cmd.newSession !== undefined && cmd.actor !== undefined) throw new InvalidCommandError(`${p}.actor`, 'must not be given with newSession (set newSession.principal)');
      return cmd;
    }
    case 'proclaim':
      checkKeys(x, p, ['kind', 'name', 'sessionId', 'value', 'actor']);
      return withActor<Extract<Command, { kind: 'proclaim' }>>({ kind: 'proclaim', name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID), value: str(x, p, 'value', isElectionValue, VALUE) }, x, p);
    case 'resign':
      checkKeys(x, p, ['kind', 'name', 'sessionId', 'actor']);
      return withActor<Extract<Command, { kind: 'resign' }>>({ kind: 'resign', name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID) }, x, p);
    case 'semRelease': {
      checkKeys(x, p, ['kind', 'name', 'sessionId', 'actor', 'settles']);
      const cmd = withActor<Extract<Command, { kind: 'semRelease' }>>({ kind: 'semRelease', name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID) }, x, p);
      if (has(x, 'settles')) cmd.settles = str(x, p, 'settles', isIdempotencyKey, 'an Idempotency-Key (1-128 bytes)');
      return cmd;
    }
    case 'semSetLimit':
      checkKeys(x, p, ['kind', 'name', 'limit']);
      return { kind: 'semSetLimit', name: str(x, p, 'name', isLockName, NAME), limit: int(x, p, 'limit', 1, MAX_PERMITS) };
    case 'semCancelWait':
      checkKeys(x, p, ['kind', 'name', 'sessionId', 'since']);
      return { kind: 'semCancelWait', name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID), since: int(x, p, 'since', 1, Number.MAX_SAFE_INTEGER) };
    case 'release': {
      checkKeys(x, p, ['kind', 'name', 'sessionId', 'fencingToken', 'actor', 'settles']);
      const cmd: Command = { kind: 'release', name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID) };
      if (has(x, 'fencingToken')) cmd.fencingToken = int(x, p, 'fencingToken', 1, Number.MAX_SAFE_INTEGER);
      if (has(x, 'settles')) cmd.settles = str(x, p, 'settles', isIdempotencyKey, 'an Idempotency-Key (1-128 bytes)');
      return withActor(cmd, x, p);
    }
    case 'cancelWait': {
      checkKeys(x, p, ['kind', 'name', 'sessionId', 'since']);
      const cmd: Command = { kind: 'cancelWait', name: str(x, p, 'name', isLockName, NAME), sessionId: str(x, p, 'sessionId', isSessionId, SID) };
      if (has(x, 'since')) cmd.since = int(x, p, 'since', 1, Number.MAX_SAFE_INTEGER);
      return cmd;
    }
    case 'expireSession':
      checkKeys(x, p, ['kind', 'sessionId']);
      return { kind: 'expireSession', sessionId: str(x, p, 'sessionId', isSessionId, SID) };
    case 'endLockDelay': {
      checkKeys(x, p, ['kind', 'name', 'since']);
      const cmd: Command = { kind: 'endLockDelay', name: str(x, p, 'name', isLockName, NAME) };
      if (has(x, 'since')) cmd.since = int(x, p, 'since', 1, Number.MAX_SAFE_INTEGER);
      return cmd;
    }
    case 'barrier':
      checkKeys(x, p, ['kind', 'term']);
      return { kind: 'barrier', term: int(x, p, 'term', 0, Number.MAX_SAFE_INTEGER) };
    default:
      throw new InvalidCommandError(`${p}.kind`, `must be one of openSession, closeSession, acquire, release, cancelWait, expireSession, endLockDelay, barrier, semAcquire, semRelease, semSetLimit, semCancelWait, revoke, expireHold, campaign, proclaim, resign, acquireAll, releaseAll; got ${describe(x['kind'])}`);
  }
}

/**
 * Checks every field of a decoded envelope (types, ranges, name syntax, no unknown
 * fields) and returns a fresh, canonical copy. Throws InvalidCommandError naming the field.
 */
export function parseEnvelope(x: unknown): Envelope {
  if (!isPlainObject(x)) throw new InvalidCommandError('envelope', `must be an object, got ${describe(x)}`);
  checkKeys(x, 'envelope', ['atMs', 'idempotencyKey', 'keyBinding', 'cmd']);
  const atMs = int(x, 'envelope', 'atMs', 0, Number.MAX_SAFE_INTEGER);
  const cmd = parseCommand(x['cmd']);
  if (!has(x, 'idempotencyKey')) {
    if (has(x, 'keyBinding')) throw new InvalidCommandError('envelope.keyBinding', 'needs an idempotencyKey');
    return { atMs, cmd };
  }
  const idempotencyKey = str(x, 'envelope', 'idempotencyKey', isIdempotencyKey, 'an idempotency key (1–128 bytes of well-formed UTF-8)');
  // Rebuild with the canonical key order (atMs, idempotencyKey?, keyBinding?, cmd).
  if (!has(x, 'keyBinding')) return { atMs, idempotencyKey, cmd };
  return { atMs, idempotencyKey, keyBinding: parseKeyBinding(x['keyBinding']), cmd };
}

function parseKeyBinding(x: unknown): KeyBinding {
  const p = 'envelope.keyBinding';
  if (!isPlainObject(x)) throw new InvalidCommandError(p, `must be an object, got ${describe(x)}`);
  checkKeys(x, p, ['principal', 'digest']);
  return { principal: str(x, p, 'principal', isBindingPrincipal, `'' or ${PRINCIPAL}`), digest: str(x, p, 'digest', isRequestDigest, '32–64 lowercase hex digits') };
}

/** a binding's principal: a token name, or '' for an anonymous caller (auth off) */
export function isBindingPrincipal(x: unknown): x is string {
  return x === '' || isPrincipal(x);
}
