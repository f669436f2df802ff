// Input rules of the REST contract (docs/contract.md §3 "REST API"): lock names, owners,
// ids, durations, tokens, the Idempotency-Key header. Every failure becomes ONE
// ApiError('invalid_request') whose message names the field ("body.ttl_ms: must be >= 1000,
// got 5"), so a client can fix its request without reading server logs. zod gives the
// shapes; the wording is src/zod-error.ts's.
import { z } from 'zod';
import { ApiError, invalid } from './errors.js';
import { describeValue, zodErrorText } from '../zod-error.js';
// One source of truth with the FSM, which re-checks every committed value.
import { MAX_DURATION_MS, MAX_ELECTION_VALUE_BYTES, MAX_IDEMPOTENCY_KEY_BYTES, MAX_OWNER_BYTES, MAX_PERMITS, MAX_SET_NAMES, MAX_WAIT_MS, SESSION_ID_RE } from '../lock-fsm/names.js';

/** the largest request body (docs/contract.md §3 "Errors": over it, 413 payload_too_large) */
export const BODY_LIMIT_BYTES = 64 * 1024;
export const MAX_NAME_BYTES = 256;
export { MAX_IDEMPOTENCY_KEY_BYTES, MAX_OWNER_BYTES, MAX_WAIT_MS };
export const MAX_LIST_LIMIT = 10_000;
export const DEFAULT_LIST_LIMIT = 1000;
/** Chubby caps lock-delay at one minute; a longer delay only strands locks. */
export const MAX_LOCK_DELAY_MS = 60_000;
/** max_hold_ms (docs/contract.md §4 "Revocation and maximum hold"): the leader checks
 *  deadlines once per tick (100 ms by default), so a shorter bound means nothing; the
 *  upper bound is the log's duration bound (2^31-1 ms, ~24.8 days). */
export const MIN_MAX_HOLD_MS = 100;
export const MAX_MAX_HOLD_MS = MAX_DURATION_MS;

/** TTL bounds come from the cluster file (session.min_ttl_ms / max_ttl_ms). */
export interface ApiLimits {
  minTtlMs: number;
  maxTtlMs: number;
}

const NAME_CHARS = /^[A-Za-z0-9._:/-]+$/;
const SESSION_ID = SESSION_ID_RE;
const MEMBER_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `name` is not a valid lock name, or null. Names are opaque byte strings over a
 *  small alphabet, except that "." and ".." segments are refused: HTTP clients and
 *  proxies normalise them away (curl, browsers), so the name the server would see differs
 *  from the one the client wrote, and "billing/../x" would pass a "billing/" prefix right. */
export function lockNameProblem(name: string, what = 'name'): string | null {
  if (name.length === 0) return `${what} must not be empty`;
  if (name.length > MAX_NAME_BYTES) return `${what} is ${name.length} bytes, at most ${MAX_NAME_BYTES} allowed`;
  if (!NAME_CHARS.test(name)) return `${what} may contain only [A-Za-z0-9._:/-], got ${describeValue(name)}`;
  if (name.split('/').some((seg) => seg === '.' || seg === '..')) return `${what} must not contain "." or ".." path segments, got ${describeValue(name)}`;
  return null;
}

/** Percent-decode one raw path segment; bad encoding is the client's error, not a crash. */
export function decodeSegment(raw: string, field: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw invalid(field, `bad percent-encoding in ${describeValue(raw)}`);
  }
}

export function assertLockName(name: string, field = 'path.name'): string {
  const p = lockNameProblem(name, 'lock name');
  if (p) throw invalid(field, p);
  return name;
}

export function assertSessionId(id: string, field = 'path.id'): string {
  if (!SESSION_ID.test(id)) throw invalid(field, `expected a session id (1-128 chars of [A-Za-z0-9._~-]), got ${describeValue(id)}`);
  return id;
}

export function assertMemberId(id: string, field = 'path.id'): string {
  if (!MEMBER_ID.test(id)) throw invalid(field, `expected a node id (1-63 chars of [A-Za-z0-9_-]), got ${describeValue(id)}`);
  return id;
}

/** The Idempotency-Key header: absent, or 1–128 bytes. */
export function idempotencyKey(h: string | string[] | undefined): string | undefined {
  if (h === undefined) return undefined;
  if (Array.isArray(h)) throw invalid('header Idempotency-Key', 'must be sent once');
  const bytes = Buffer.byteLength(h, 'utf8');
  if (bytes < 1 || bytes > MAX_IDEMPOTENCY_KEY_BYTES) throw invalid('header Idempotency-Key', `must be 1-${MAX_IDEMPOTENCY_KEY_BYTES} bytes, got ${bytes}`);
  return h;
}

// ---------------------------------------------------------------------------------------
// zod building blocks

const sessionId = z.string().regex(SESSION_ID, { error: (i) => `expected a session id (1-128 chars of [A-Za-z0-9._~-]), got ${describeValue(i.input)}` });
const owner = z.string().refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_OWNER_BYTES && !LONE_SURROGATE.test(s), {
  error: (i) => `must be at most ${MAX_OWNER_BYTES} bytes of UTF-8, got ${Buffer.byteLength(String(i.input), 'utf8')} bytes`,
});
const fencingToken = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const waitMs = z.number().int().min(0).max(MAX_WAIT_MS);
const maxHoldMs = z.number().int().min(MIN_MAX_HOLD_MS).max(MAX_MAX_HOLD_MS);
const ttl = (l: ApiLimits) => z.number().int().min(l.minTtlMs).max(l.maxTtlMs);
const httpUrl = z.string().max(2048).refine((s) => {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password && (u.pathname === '/' || u.pathname === '') && !u.search && !u.hash;
  } catch {
    return false;
  }
}, { error: (i) => `expected an http(s) URL (scheme://host:port), got ${describeValue(i.input)}` });

/** an election's value: up to 4 KiB of UTF-8, counted in bytes (docs/contract.md §4 "Leader election") */
const electionValue = z.string().refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_ELECTION_VALUE_BYTES && !LONE_SURROGATE.test(s), {
  error: (i) => LONE_SURROGATE.test(String(i.input))
    ? 'must be well-formed UTF-8 (it holds a lone surrogate)'
    : `must be at most ${MAX_ELECTION_VALUE_BYTES} bytes (4 KiB) of UTF-8, got ${Buffer.byteLength(String(i.input), 'utf8')} bytes`,
});

/** a semaphore's limit, or the permits of a request: 1–10000 */
const permits = z.number().int().min(1).max(MAX_PERMITS);

/** a lock set's names (docs/contract.md §5 "Lock sets"): 1–64 distinct valid lock names */
const lockName = z.string().superRefine((n, c) => {
  const p = lockNameProblem(n, 'lock name');
  if (p) c.addIssue({ code: 'custom', message: p });
});
const setNames = z.array(lockName).min(1, { error: `must name 1-${MAX_SET_NAMES} locks, got none` }).max(MAX_SET_NAMES, { error: (i) => `must name at most ${MAX_SET_NAMES} locks, got ${Array.isArray(i.input) ? i.input.length : '?'}` })
  .superRefine((names, c) => {
    const seen = new Set<string>();
    names.forEach((n, i) => {
      if (seen.has(n)) c.addIssue({ code: 'custom', path: [i], message: `names ${describeValue(n)} twice (names must be distinct)` });
      seen.add(n);
    });
  });

export function bodySchemas(l: ApiLimits) {
  return {
    openSession: z.strictObject({ ttl_ms: ttl(l).optional(), owner: owner.optional(), lock_delay_ms: z.number().int().min(0).max(MAX_LOCK_DELAY_MS).optional() }),
    empty: z.strictObject({}),
    acquire: z.strictObject({ session_id: sessionId.optional(), ttl_ms: ttl(l).optional(), wait_ms: waitMs.optional(), owner: owner.optional(), mode: z.enum(['exclusive', 'shared']).optional(), max_hold_ms: maxHoldMs.optional() }),
    renew: z.strictObject({ session_id: sessionId }),
    semAcquire: z.strictObject({ session_id: sessionId.optional(), ttl_ms: ttl(l).optional(), limit: permits, permits: permits.optional(), wait_ms: waitMs.optional(), owner: owner.optional(), max_hold_ms: maxHoldMs.optional() }),
    /** POST /v1/locks/{name}/revoke and /v1/semaphores/{name}/revoke: that session's grant, or every grant */
    revoke: z.strictObject({ session_id: sessionId.optional() }),
    semLimit: z.strictObject({ limit: permits }),
    semRelease: z.strictObject({ session_id: sessionId }),
    campaign: z.strictObject({ session_id: sessionId.optional(), ttl_ms: ttl(l).optional(), value: electionValue, wait_ms: waitMs.optional(), owner: owner.optional(), max_hold_ms: maxHoldMs.optional() }),
    proclaim: z.strictObject({ session_id: sessionId, value: electionValue }),
    resign: z.strictObject({ session_id: sessionId }),
    release: z.strictObject({ session_id: sessionId, fencing_token: fencingToken.optional() }),
    /** POST /v1/locks/acquire-all and release-all (docs/contract.md §5 "Lock sets") */
    acquireAll: z.strictObject({ names: setNames, session_id: sessionId.optional(), ttl_ms: ttl(l).optional(), wait_ms: waitMs.optional(), mode: z.enum(['exclusive', 'shared']).optional(), owner: owner.optional(), max_hold_ms: maxHoldMs.optional() }),
    releaseAll: z.strictObject({ names: setNames, session_id: sessionId }),
    addMember: z.strictObject({
      id: z.string().regex(MEMBER_ID, { error: (i) => `expected a node id (1-63 chars of [A-Za-z0-9_-]), got ${describeValue(i.input)}` }),
      api: httpUrl,
      peer: httpUrl,
      /** add as a learner only; promote later (POST /v1/cluster/members/{id}/promote) */
      learner: z.boolean().optional(),
    }),
    transfer: z.strictObject({ to: z.string().regex(MEMBER_ID, { error: (i) => `expected a node id, got ${describeValue(i.input)}` }).optional() }),
  };
}
export type BodySchemas = ReturnType<typeof bodySchemas>;

const consistency = z.enum(['linearizable', 'stale']);
const intString = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,16}$/, { error: (i) => `expected an integer, got ${describeValue(i.input)}` })
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

export const querySchemas = {
  none: z.strictObject({}),
  read: z.strictObject({ consistency: consistency.optional() }),
  list: z.strictObject({
    prefix: z.string().max(MAX_NAME_BYTES).optional(),
    limit: intString(1, MAX_LIST_LIMIT).optional(),
    consistency: consistency.optional(),
  }),
  check: z.strictObject({ fencing_token: intString(1, Number.MAX_SAFE_INTEGER), consistency: z.literal('linearizable').optional() }),
  watch: z.strictObject({ prefix: z.string().max(MAX_NAME_BYTES).optional(), from_index: intString(0, Number.MAX_SAFE_INTEGER).optional() }),
};

// ---------------------------------------------------------------------------------------

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validate a JSON body. `undefined` (no body) counts as `{}` when `optional`. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, optional: boolean): z.output<S> {
  if (body === undefined && optional) return parseEmpty(schema, 'body');
  if (!isPlainObject(body)) throw invalid('body', `expected a JSON object, got ${body === undefined ? 'no body' : describeValue(body)}`);
  return parseWith(schema, body, 'body');
}

/** Validate a query string object (values are strings, repeated keys arrays). */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown): z.output<S> {
  if (!isPlainObject(query) || isEmpty(query)) return parseEmpty(schema, 'query');
  return parseWith(schema, query, 'query');
}

function isEmpty(o: Record<string, unknown>): boolean {
  for (const _ in o) return false;
  return true;
}

// Most requests have no query string and many no body: their answer is the same every
// time, so each schema parses `{}` once (a frozen value, so no caller can change the
// shared copy). `npm run bench:http` counts what a zod parse costs per request.
const emptyParses = new WeakMap<z.ZodType, { ok: true; data: unknown } | { ok: false }>();
function parseEmpty<S extends z.ZodType>(schema: S, where: string): z.output<S> {
  let r = emptyParses.get(schema);
  if (r === undefined) {
    const p = schema.safeParse({});
    r = p.success ? { ok: true, data: Object.freeze(p.data) } : { ok: false };
    emptyParses.set(schema, r);
  }
  if (r.ok) return r.data as z.output<S>;
  return parseWith(schema, {}, where); // throws the schema's own message
}

function parseWith<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const r = schema.safeParse(value, { reportInput: true });
  if (r.success) return r.data;
  throw new ApiError('invalid_request', zodErrorText(r.error, { root: where }));
}
