// Syntax and range rules for everything that enters the lock state machine (api.md §3
// "Lock names", "owner", "wait_ms", "Idempotency-Key"). The REST layer validates first
// with zod; these checks run again on every decoded log entry and snapshot, because a
// committed entry is replayed on every replica for ever: one malformed value would be
// a permanent divergence, so the FSM never trusts its input's shape.

/** api.md §3: 1–256 bytes of [A-Za-z0-9._:/-] (ASCII, so bytes = chars). */
export const LOCK_NAME_RE = /^[A-Za-z0-9._:/-]{1,256}$/;
/** Session ids are drawn by the leader and travel in URL paths (/v1/sessions/{id}):
 *  URL-unreserved characters only, so no escaping is ever needed. */
export const SESSION_ID_RE = /^[A-Za-z0-9._~-]{1,128}$/;

/** Who opened a session (docs/security.md "Sessions belong to their token"): the API token's name when auth is on. Token names are
 *  validated against the same rule when tokens.json is loaded (src/security/tokens.ts). */
export const PRINCIPAL_RE = /^[A-Za-z0-9._:@-]{1,128}$/;

export const MAX_OWNER_BYTES = 256;
export const MAX_IDEMPOTENCY_KEY_BYTES = 128;
/** api.md §4 "Leader election": an election's value is up to 4 KiB of UTF-8. */
export const MAX_ELECTION_VALUE_BYTES = 4096;
/** api.md §3: wait_ms is 0–300000. */
export const MAX_WAIT_MS = 300_000;
/** docs/contract.md §5 "Lock sets": an acquire-all or release-all names 1–64 distinct locks. */
export const MAX_SET_NAMES = 64;
/** api.md §4 "Semaphores": a limit (and so a request's permits) is 1–10000. */
export const MAX_PERMITS = 10_000;
/** Upper bound for ttl_ms, lock_delay_ms and max_hold_ms in the log: 2^31-1, the one
 *  bound of every duration (the duration grammar's module, a leaf without imports). The
 *  cluster config narrows ttl to [min_ttl_ms, max_ttl_ms]. Committed entries and
 *  snapshots hold values up to it, so it never shrinks. */
export { MAX_DURATION_MS } from '@raftlock/client/duration';

export function isLockName(x: unknown): x is string {
  return typeof x === 'string' && LOCK_NAME_RE.test(x);
}

export function isSessionId(x: unknown): x is string {
  return typeof x === 'string' && SESSION_ID_RE.test(x);
}

export function isPrincipal(x: unknown): x is string {
  return typeof x === 'string' && PRINCIPAL_RE.test(x);
}

/**
 * UTF-8 byte length of a string, or -1 if it holds a lone surrogate. A lone surrogate
 * cannot be encoded as UTF-8: a codec would replace it, so the value a replica decodes
 * would differ from the one the leader applied. Such strings are rejected outright.
 */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d < 0xdc00 || d > 0xdfff) return -1;
      n += 4;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return -1;
    else n += 3;
  }
  return n;
}

/** owner: up to 256 bytes of well-formed UTF-8 (the empty string is the default owner). */
export function isOwner(x: unknown): x is string {
  if (typeof x !== 'string') return false;
  const n = utf8Length(x);
  return n >= 0 && n <= MAX_OWNER_BYTES;
}

/** an election value: 0–4096 bytes of well-formed UTF-8 (measured in bytes, not chars) */
export function isElectionValue(x: unknown): x is string {
  if (typeof x !== 'string') return false;
  const n = utf8Length(x);
  return n >= 0 && n <= MAX_ELECTION_VALUE_BYTES;
}

/** Idempotency-Key: 1–128 bytes of well-formed UTF-8. */
export function isIdempotencyKey(x: unknown): x is string {
  if (typeof x !== 'string') return false;
  const n = utf8Length(x);
  return n >= 1 && n <= MAX_IDEMPOTENCY_KEY_BYTES;
}

/** The digest of a keyed request's canonical form (Envelope.keyBinding.digest): 32–64
 *  lowercase hex digits. The node computes it (src/server/leader/request-digest.ts); the FSM only
 *  compares it. */
export function isRequestDigest(x: unknown): x is string {
  return typeof x === 'string' && REQUEST_DIGEST_RE.test(x);
}
const REQUEST_DIGEST_RE = /^[0-9a-f]{32,64}$/;

/** An integer in [lo, hi] (both safe integers). */
export function isIntIn(x: unknown, lo: number, hi: number): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= lo && x <= hi;
}

/** Ordinal string comparison (UTF-16 code units; all ids and names are ASCII, so this is
 *  byte order). Used wherever an order must be identical on every replica. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
