// The answers of the REST contract (docs/contract.md §3 "REST API") as zod schemas, for the
// OpenAPI document (src/api/openapi.ts). Requests are validated by validate.ts's schemas,
// which the document reuses as they are; answers are built by the service, so these
// describe them (and test/ops/openapi.test.ts checks real answers against them). Objects
// are open (extra fields may be added later without breaking clients); required fields are
// the contract's.
import { z } from 'zod';

const token = z.number().int().min(1).describe('fencing token: strictly greater than every earlier grant of any lock');
const sessionId = z.string().describe('session id');
const lockName = z.string().describe('lock name: 1-256 bytes of [A-Za-z0-9._:/-]');
const maxHoldLeft = z.number().int().min(0).optional().describe('present when the grant has a maximum hold: at most how much longer it lasts (ms), counted from when the request was sent; a re-acquire that returns an existing grant answers that grant\'s own (docs/contract.md §4)');

export const responseSchemas = {
  SessionGrant: z.object({ session_id: sessionId, ttl_ms: z.number().int() }),
  Keepalive: z.object({
    session_id: sessionId,
    ttl_ms: z.number().int(),
    grants: z.array(z.object({ kind: z.enum(['lock', 'semaphore', 'election']), name: lockName, fencing_token: token, mode: z.literal('shared').optional().describe('present on a shared grant'), waiters: z.number().int().min(0).optional().describe('how many requests wait on the name (docs/contract.md §5 "Contention"); servers of this version always send it') }))
      .optional().describe("this version's extension: every grant the session holds as of the keepalive (a revoked or max-hold-ended grant is missing)"),
  }),
  Session: z.object({ session_id: sessionId, owner: z.string(), ttl_ms: z.number().int(), locks: z.array(lockName) }),
  SessionClosed: z.object({ released: z.array(lockName).describe('locks the session held, released at once') }),
  Grant: z.object({ name: lockName, session_id: sessionId, fencing_token: token, ttl_ms: z.number().int(), mode: z.literal('shared').optional().describe('present on a shared grant'), max_hold_ms: maxHoldLeft }),
  Holder: z.object({ session_id: sessionId, owner: z.string(), fencing_token: token }),
  Released: z.object({ name: lockName, released: z.literal(true) }),
  LockSetGrant: z.object({ session_id: sessionId, ttl_ms: z.number().int(), grants: z.array(z.object({ name: lockName, fencing_token: token, max_hold_ms: maxHoldLeft })).min(1).describe('every name, in the request\'s order, each with its own token'), mode: z.literal('shared').optional().describe('present on a shared set') }),
  ReleasedAll: z.object({ released: z.array(lockName).describe('the names this session held and released, in the request\'s order') }),
  Check: z.object({ name: lockName, current: z.boolean() }),
  Revoked: z.object({ name: lockName, revoked: z.array(z.object({ session_id: sessionId, fencing_token: token })).describe('the grants taken away, by session id (empty when none was held and no session_id was given)') }),
  TransferResult: z.object({ leader_id: z.string() }),
  Health: z.object({ status: z.string() }),
  Error: z.object({
    error: z.object({
      code: z.string().regex(/^[a-z_]+$/).describe('stable snake_case code (docs/contract.md §3 "Errors")'),
      message: z.string().describe('what went wrong, naming the field for invalid_request'),
      holder: z.object({ session_id: sessionId, owner: z.string(), fencing_token: token }).optional().describe('lock_held: the current holder'),
      leader: z.object({ session_id: sessionId, value: z.string(), fencing_token: token }).nullable().optional().describe("lock_held on a campaign: the election's current leader (null while none leads)"),
      blocked: z.array(z.object({ name: lockName, holder: z.object({ session_id: sessionId, owner: z.string(), fencing_token: token }).optional().describe('its exclusive holder, when it has one') })).optional().describe('lock_held of an acquire-all: each lock that kept the set from being granted'),
      cycle: z.array(z.object({ session_id: sessionId, name: lockName, kind: z.literal('semaphore').optional().describe('present when the name is a semaphore\'s') })).optional().describe('deadlock: each session on the cycle with the name it waits on (for the next one), the refused request\'s session first'),
    }),
  }),
};

const holder = responseSchemas.Holder;
const lockView = z.object({
  name: lockName,
  held: z.boolean(),
  holder: holder.optional().describe('the exclusive holder'),
  waiters: z.number().int().min(0),
  mode: z.enum(['exclusive', 'shared']).optional().describe('while held: the mode of its grants'),
  holders: z.array(z.object({ session_id: sessionId, owner: z.string(), fencing_token: token, mode: z.enum(['exclusive', 'shared']) })).optional().describe('while held: every holder, in grant order'),
});
const member = z.object({
  id: z.string(),
  api: z.string(),
  peer: z.string(),
  role: z.enum(['leader', 'follower', 'learner', 'candidate']).optional(),
  match_index: z.number().int().optional().describe('leader view only'),
  lag: z.number().int().optional().describe('leader view only: entries behind the leader'),
  promotion_pending: z.boolean().optional().describe('learners only: true when the leader promotes it to voter by itself once it has caught up, false when it stays a learner'),
});
const clusterView = z.object({
  cluster: z.string().optional(),
  node_id: z.string(),
  role: z.enum(['leader', 'follower', 'candidate', 'learner']),
  term: z.number().int(),
  leader_id: z.string().nullable(),
  commit_index: z.number().int(),
  applied_index: z.number().int(),
  members: z.array(member),
  not_ready: z.string().optional().describe('present while this node is not ready: the reason its /readyz gives with its 503 (e.g. "bootstrapping: waiting for n4")'),
});

const semHolder = z.object({ session_id: sessionId, owner: z.string(), permits: z.number().int().min(1), fencing_token: token });
const semWaiter = z.object({ session_id: sessionId, owner: z.string(), permits: z.number().int().min(1), position: z.number().int().min(1) });

const semaphoreView = z.object({ name: lockName, limit: z.number().int().min(0).describe('0 for an idle semaphore (it keeps no state)'), in_use: z.number().int().min(0), holders: z.array(semHolder).describe('in grant order'), waiters: z.array(semWaiter) });

export const viewSchemas = {
  Lock: lockView,
  SemaphoreGrant: z.object({ name: lockName, session_id: sessionId, permits: z.number().int().min(1), limit: z.number().int().min(1), fencing_token: token, ttl_ms: z.number().int(), max_hold_ms: maxHoldLeft }),
  Semaphore: semaphoreView,
  SemaphoreList: z.object({ semaphores: z.array(z.object({ name: lockName, limit: z.number().int().min(1), in_use: z.number().int().min(0), holders: z.array(semHolder).describe('in grant order'), waiters: z.array(semWaiter) })).describe('semaphores with holders or waiters, sorted by name') }),
  SemaphoreLimit: z.object({ name: lockName, limit: z.number().int().min(1) }),
  Campaign: z.object({ name: lockName, session_id: sessionId, value: z.string().describe("the leader's value"), fencing_token: token, ttl_ms: z.number().int(), max_hold_ms: maxHoldLeft }),
  Election: z.object({ name: lockName, leader: z.object({ session_id: sessionId, value: z.string(), fencing_token: token }).nullable().describe('null while no campaign holds the election') }),
  Proclaimed: z.object({ name: lockName, value: z.string() }),
  Resigned: z.object({ name: lockName, resigned: z.literal(true) }),
  LockList: z.object({ locks: z.array(lockView) }),
  ClusterView: clusterView,
  Status: z.object({
    generated_at_ms: z.number(),
    node: clusterView.describe("the answering node's own view"),
    leader_id: z.string().nullable(),
    members: z.array(z.object({
      id: z.string(),
      api: z.string(),
      role: z.string().describe('as the member reports itself, or "unreachable"'),
      term: z.number().int().nullable(),
      commit_index: z.number().int().nullable(),
      applied_index: z.number().int().nullable(),
      lag: z.number().int().nullable(),
      not_ready: z.string().optional().describe('as the member reports it (GET /v1/cluster): why it is not ready'),
      error: z.string().optional(),
    })),
    observations: z.object({
      node_id: z.string(),
      node_started_at_ms: z.number(),
      leader_changes: z.array(z.object({ at_ms: z.number(), leader_id: z.string().nullable(), term: z.number().int() })),
      sessions: z.number().int(),
      locks_held: z.number().int(),
      waiters: z.number().int(),
      locks_in_delay: z.number().int(),
      last_token: z.number().int(),
    }),
    locks: z.array(z.object({
      name: lockName, session_id: z.string().describe('the first holder (in grant order)'), owner: z.string(), fencing_token: token, waiters: z.number().int(), held_since_ms: z.number(), held_since_exact: z.boolean(),
      mode: z.enum(['exclusive', 'shared']).optional(),
      holders: z.array(z.object({ session_id: z.string(), owner: z.string(), fencing_token: token, held_since_ms: z.number(), held_since_exact: z.boolean() })).optional().describe('every holder, in grant order (a shared lock has several)'),
    })),
    locks_truncated: z.boolean(),
    semaphores: z.array(semaphoreView).optional().describe('semaphores with holders or waiters, sorted by name, as GET /v1/semaphores shows them'),
    semaphores_truncated: z.boolean().optional(),
    elections: z.array(z.object({
      name: lockName,
      leader: z.object({ session_id: z.string(), owner: z.string(), value: z.string(), fencing_token: token }),
      waiters: z.number().int().min(0).describe('requests queued behind the leader: the campaigners waiting to lead'),
    })).optional().describe('elections that have a leader, sorted by name'),
    elections_truncated: z.boolean().optional(),
    contended: z.array(z.object({
      name: lockName,
      waiters: z.number().int().min(1),
      waiting_since_ms: z.number().describe('when the oldest current wait began, as the answering node applied it'),
      waiting_since_exact: z.boolean().describe('false: it began before the node was watching (a lower bound)'),
      holder: z.object({ session_id: z.string(), owner: z.string(), fencing_token: token, mode: z.enum(['exclusive', 'shared']), holders: z.number().int().min(1) }).optional().describe('the first holder and how many hold it; absent while free'),
      in_delay: z.literal(true).optional(),
    })).optional().describe('the most contended locks: most waiters first, then the longest wait'),
    activity: z.array(z.object({
      at_ms: z.number(), grants: z.number().int().min(0), waited: z.number().int().min(0), wait_avg_ms: z.number().int().min(0), wait_max_ms: z.number().int().min(0),
    })).optional().describe("the answering node's applied grants per second over the last minute, with how long the granted requests had waited"),
  }),
};
