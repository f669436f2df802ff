// The OpenAPI 3.1 document of the REST API (GET /openapi.json), generated from the SAME
// zod schemas the routes validate with (validate.ts: bodies, queries) plus the answer
// schemas of response-schemas.ts, through zod 4's z.toJSONSchema (JSON Schema 2020-12,
// which OpenAPI 3.1 uses as is). A request that validates against this document is one the
// routes accept, bar what JSON Schema cannot say (UTF-8 byte limits, URL shape, "." path
// segments): those are in the descriptions and the server still answers 400 for them.
import { z } from 'zod';
import { ERROR_CATALOG, type ErrorCode } from './errors.js';
import { responseSchemas, viewSchemas } from './response-schemas.js';
import { bodySchemas, MAX_IDEMPOTENCY_KEY_BYTES, MAX_NAME_BYTES, querySchemas, type ApiLimits } from './validate.js';

type Json = Record<string, unknown>;

function schemaOf(s: z.ZodType): Json {
  // io 'input': what a client sends (query integers are strings before the transform)
  const out = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete out['$schema'];
  return out;
}

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const jsonContent = (schema: Json, example?: unknown): Json => ({ 'application/json': { schema, ...(example !== undefined ? { example } : {}) } });

const SEM_NAME_PARAM: Json = {
  name: 'name', in: 'path', required: true,
  description: 'semaphore name: the rules of a lock name; when the last segment is itself acquire|release|limit|revoke, encode the slash before it.',
  schema: { type: 'string' },
};
const ELECTION_NAME_PARAM: Json = {
  name: 'name', in: 'path', required: true,
  description: 'election name: the rules of a lock name (an election is a lock whose holder publishes a value); when the last segment is itself campaign|proclaim|resign, encode the slash before it.',
  schema: { type: 'string' },
};
const LOCK_NAME_PARAM: Json = {
  name: 'name', in: 'path', required: true,
  description: `lock name: 1-${MAX_NAME_BYTES} bytes of [A-Za-z0-9._:/-], no "." or ".." segments. A "/" inside the name may be sent raw or as %2F; when the last segment is itself acquire|renew|release|check|revoke, encode the slash before it.`,
  schema: { type: 'string', minLength: 1, maxLength: MAX_NAME_BYTES, pattern: '^[A-Za-z0-9._:/-]+$' },
};
const SESSION_ID_PARAM: Json = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._~-]{1,128}$' } };
const MEMBER_ID_PARAM: Json = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$' } };
const IDEMPOTENCY_PARAM: Json = {
  name: 'Idempotency-Key', in: 'header', required: false,
  description: 'a retry with the same key returns the first answer and changes nothing twice (at least 10 minutes). The key is bound to its first request (token, operation, name, body): sent with another, it gets 422 idempotency_key_reused and nothing is applied',
  schema: { type: 'string', minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_BYTES },
};

/** query parameters from a strict zod object, one per field */
function queryParams(s: z.ZodObject): Json[] {
  return Object.entries(s.shape).map(([name, field]) => {
    const f = field as z.ZodType;
    return { name, in: 'query', required: !f.safeParse(undefined).success, schema: schemaOf(f) };
  });
}

function errors(...codes: ErrorCode[]): Json {
  return errorResponses(['invalid_request', 'unauthenticated', ...codes]);
}

function errorResponses(codes: ErrorCode[]): Json {
  const out: Json = {};
  for (const code of codes) {
    const status = String(ERROR_CATALOG[code].status);
    const prev = out[status] as { description: string } | undefined;
    out[status] = { description: prev ? `${prev.description}, ${code}` : code, content: jsonContent(ref('Error')) };
  }
  return out;
}

interface Op {
  summary: string;
  description?: string;
  tags: string[];
  params?: Json[];
  body?: { schema: string; required: boolean; example?: unknown };
  ok: { status: number; schema?: string; example?: unknown; contentType?: string; description?: string };
  errors: Json;
  open?: boolean;
}

/** operations that take the Idempotency-Key header but log nothing (a renew is a read
 *  barrier and a lease renewal): their key is not recorded, so it is never "reused" */
const UNLOGGED_KEYED = new Set(['renew']);

function operation(id: string, o: Op): Json {
  // a logged change binds its key to the request: the same key with another gets 422
  const errors = o.params?.includes(IDEMPOTENCY_PARAM) && !UNLOGGED_KEYED.has(id) ? { ...o.errors, ...errorResponses(['idempotency_key_reused']) } : o.errors;
  const okContent = o.ok.contentType
    ? { [o.ok.contentType]: { schema: { type: 'string', ...(o.ok.contentType === 'application/octet-stream' ? { format: 'binary' } : {}) } } }
    : jsonContent(ref(o.ok.schema ?? 'Health'), o.ok.example);
  return {
    operationId: id,
    summary: o.summary,
    ...(o.description ? { description: o.description } : {}),
    tags: o.tags,
    ...(o.params ? { parameters: o.params } : {}),
    ...(o.body ? { requestBody: { required: o.body.required, content: jsonContent(ref(o.body.schema), o.body.example) } } : {}),
    responses: { [String(o.ok.status)]: { description: o.ok.description ?? 'success', content: okContent }, ...errors },
    ...(o.open ? { security: [] } : {}),
  };
}

/** The whole document for a server with these TTL limits. */
export function openApiDocument(limits: ApiLimits, version: string): Json {
  const b = bodySchemas(limits);
  const schemas: Json = {
    OpenSessionRequest: schemaOf(b.openSession),
    AcquireRequest: schemaOf(b.acquire),
    RenewRequest: schemaOf(b.renew),
    ReleaseRequest: schemaOf(b.release),
    EmptyRequest: schemaOf(b.empty),
    AddMemberRequest: schemaOf(b.addMember),
    TransferRequest: schemaOf(b.transfer),
    SemaphoreAcquireRequest: schemaOf(b.semAcquire),
    SemaphoreLimitRequest: schemaOf(b.semLimit),
    SemaphoreReleaseRequest: schemaOf(b.semRelease),
    RevokeRequest: schemaOf(b.revoke),
    CampaignRequest: schemaOf(b.campaign),
    ProclaimRequest: schemaOf(b.proclaim),
    ResignRequest: schemaOf(b.resign),
    AcquireAllRequest: schemaOf(b.acquireAll),
    ReleaseAllRequest: schemaOf(b.releaseAll),
  };
  for (const [k, s] of Object.entries({ ...responseSchemas, ...viewSchemas })) schemas[k] = schemaOf(s);

  const grantExample = { name: 'billing/invoice-42', session_id: 's-4fzq9c2k', fencing_token: 1042, ttl_ms: 10000 };
  const paths: Json = {
    '/v1/sessions': {
      post: operation('openSession', { summary: 'open a session (a TTL lease)', tags: ['sessions'], params: [IDEMPOTENCY_PARAM], body: { schema: 'OpenSessionRequest', required: false, example: { ttl_ms: 10000, owner: 'worker-7' } }, ok: { status: 201, schema: 'SessionGrant', example: { session_id: 's-4fzq9c2k', ttl_ms: 10000 } }, errors: errors('permission_denied', 'unsupported_media_type', 'payload_too_large', 'too_many_requests', 'unavailable', 'timeout') }),
    },
    '/v1/sessions/{id}/keepalive': {
      post: operation('keepalive', { summary: 'renew a session and every lock it holds', tags: ['sessions'], params: [SESSION_ID_PARAM], body: { schema: 'EmptyRequest', required: false }, ok: { status: 200, schema: 'Keepalive' }, errors: errors('permission_denied', 'session_not_found', 'unavailable', 'timeout') }),
    },
    '/v1/sessions/{id}': {
      get: operation('getSession', { summary: 'inspect a session', tags: ['sessions'], params: [SESSION_ID_PARAM], ok: { status: 200, schema: 'Session', example: { session_id: 's-4fzq9c2k', owner: 'worker-7', ttl_ms: 10000, locks: ['billing/invoice-42'] } }, errors: errors('permission_denied', 'session_not_found', 'unavailable', 'timeout') }),
      delete: operation('closeSession', { summary: 'end a session: its locks are released at once', tags: ['sessions'], params: [SESSION_ID_PARAM, IDEMPOTENCY_PARAM], ok: { status: 200, schema: 'SessionClosed', example: { released: ['billing/invoice-42'] } }, errors: errors('permission_denied', 'session_not_found', 'unavailable', 'timeout') }),
    },
    '/v1/locks': {
      get: operation('listLocks', { summary: 'list held locks', tags: ['locks'], params: queryParams(querySchemas.list), ok: { status: 200, schema: 'LockList' }, errors: errors('permission_denied', 'unavailable', 'timeout') }),
    },
    '/v1/locks/{name}': {
      get: operation('getLock', { summary: 'read a lock (linearizable; ?consistency=stale answers locally)', tags: ['locks'], params: [LOCK_NAME_PARAM, ...queryParams(querySchemas.read)], ok: { status: 200, schema: 'Lock', example: { name: 'billing/invoice-42', held: true, holder: { session_id: 's-4fzq9c2k', owner: 'worker-7', fencing_token: 1042 }, waiters: 0 } }, errors: errors('permission_denied', 'unavailable', 'timeout') }),
    },
    '/v1/locks/{name}/acquire': {
      post: operation('acquire', { summary: 'take a lock (FIFO wait up to wait_ms)', description: 'Without session_id a new session is opened with ttl_ms and returned. Acquiring a lock the session already holds returns the same token. A wait that would close a cycle of waiting sessions: 409 deadlock with `cycle` (docs/contract.md §5).', tags: ['locks'], params: [LOCK_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'AcquireRequest', required: false, example: { ttl_ms: 10000, wait_ms: 30000, owner: 'worker-7' } }, ok: { status: 200, schema: 'Grant', example: grantExample }, errors: errors('permission_denied', 'session_not_found', 'lock_held', 'deadlock', 'unsupported_media_type', 'payload_too_large', 'too_many_requests', 'unavailable', 'timeout') }),
    },
    '/v1/locks/acquire-all': {
      post: operation('acquireAll', { summary: 'take several locks at once: every name granted together, or none (FIFO wait up to wait_ms)', description: '1-64 distinct lock names; grants come in the request\'s order, each with its own fencing token. A waiting set holds one place, at its log index, in the queue of every one of its names. A name the session already holds is answered with its token. Wait ran out: 409 lock_held with `blocked`. A wait that would close a cycle of waiting sessions: 409 deadlock with `cycle` (docs/contract.md §5).', tags: ['locks'], params: [IDEMPOTENCY_PARAM], body: { schema: 'AcquireAllRequest', required: true, example: { names: ['accounts/1', 'accounts/2'], ttl_ms: 10000, wait_ms: 30000 } }, ok: { status: 200, schema: 'LockSetGrant', example: { session_id: 's-4fzq9c2k', ttl_ms: 10000, grants: [{ name: 'accounts/1', fencing_token: 1042 }, { name: 'accounts/2', fencing_token: 1043 }] } }, errors: errors('permission_denied', 'session_not_found', 'lock_held', 'deadlock', 'unsupported_media_type', 'payload_too_large', 'too_many_requests', 'unavailable', 'timeout') }),
    },
    '/v1/locks/release-all': {
      post: operation('releaseAll', { summary: 'release each of these locks the session holds', description: 'Also ends the session\'s waits on these names (a waiting set as a whole). `released` lists the names it held; [] if none.', tags: ['locks'], params: [IDEMPOTENCY_PARAM], body: { schema: 'ReleaseAllRequest', required: true, example: { names: ['accounts/1', 'accounts/2'], session_id: 's-4fzq9c2k' } }, ok: { status: 200, schema: 'ReleasedAll', example: { released: ['accounts/1', 'accounts/2'] } }, errors: errors('permission_denied', 'session_not_found', 'unsupported_media_type', 'payload_too_large', 'unavailable', 'timeout') }),
    },
    '/v1/locks/{name}/renew': {
      post: operation('renew', { summary: "renew the holder's session", tags: ['locks'], params: [LOCK_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'RenewRequest', required: true, example: { session_id: 's-4fzq9c2k' } }, ok: { status: 200, schema: 'Grant', example: grantExample }, errors: errors('permission_denied', 'session_not_found', 'not_holder', 'unsupported_media_type', 'unavailable', 'timeout') }),
    },
    '/v1/locks/{name}/release': {
      post: operation('release', { summary: 'give a lock up; the next waiter gets it', description: 'Without fencing_token, a release by a session that waits for the lock (and does not hold it) withdraws that wait: the answer stays 409 not_holder, or 200 if the grant won the race and was released at once (docs/api.md "Release").', tags: ['locks'], params: [LOCK_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'ReleaseRequest', required: true, example: { session_id: 's-4fzq9c2k', fencing_token: 1042 } }, ok: { status: 200, schema: 'Released', example: { name: 'billing/invoice-42', released: true } }, errors: errors('permission_denied', 'session_not_found', 'not_holder', 'unsupported_media_type', 'unavailable', 'timeout') }),
    },
    '/v1/locks/{name}/revoke': {
      post: operation('revoke', { summary: "take a lock's grant away (the admin right)", description: "Frees the grant of session_id, or every grant of the lock without it, at once and without lock-delay; the next waiter gets a larger token. The holder learns it from its next renew (409 not_holder) and from GET /v1/sessions/{id}; its session stays alive. A session_id that holds no grant of the lock gets 409 not_holder.", tags: ['locks'], params: [LOCK_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'RevokeRequest', required: false, example: { session_id: 's-4fzq9c2k' } }, ok: { status: 200, schema: 'Revoked', example: { name: 'billing/invoice-42', revoked: [{ session_id: 's-4fzq9c2k', fencing_token: 1042 }] } }, errors: errors('permission_denied', 'session_not_found', 'not_holder', 'unsupported_media_type', 'unavailable', 'timeout') }),
    },
    '/v1/locks/{name}/check': {
      get: operation('checkToken', { summary: 'does this fencing token still hold the lock? (Chubby CheckSequencer)', tags: ['locks'], params: [LOCK_NAME_PARAM, ...queryParams(querySchemas.check)], ok: { status: 200, schema: 'Check', example: { name: 'billing/invoice-42', current: true } }, errors: errors('permission_denied', 'unavailable', 'timeout') }),
    },
    '/v1/semaphores': {
      get: operation('listSemaphores', { summary: 'list semaphores that have holders or waiters, sorted by name, with limit, in_use, holders and waiters (linearizable; ?consistency=stale answers locally)', tags: ['semaphores'], params: queryParams(querySchemas.list), ok: { status: 200, schema: 'SemaphoreList', example: { semaphores: [{ name: 'db/pool', limit: 4, in_use: 1, holders: [{ session_id: 's-4fzq9c2k', owner: 'worker-7', permits: 1, fencing_token: 1042 }], waiters: [] }] } }, errors: errors('permission_denied', 'unavailable', 'timeout') }),
    },
    '/v1/semaphores/{name}': {
      get: operation('getSemaphore', { summary: 'read a semaphore: limit, in_use, holders, waiters with positions (linearizable; ?consistency=stale answers locally)', tags: ['semaphores'], params: [SEM_NAME_PARAM, ...queryParams(querySchemas.read)], ok: { status: 200, schema: 'Semaphore', example: { name: 'db/pool', limit: 4, in_use: 1, holders: [{ session_id: 's-4fzq9c2k', owner: 'worker-7', permits: 1, fencing_token: 1042 }], waiters: [] } }, errors: errors('permission_denied', 'unavailable', 'timeout') }),
    },
    '/v1/semaphores/{name}/acquire': {
      post: operation('acquireSemaphore', { summary: 'take permits of a semaphore (FIFO wait up to wait_ms)', description: 'The first acquire of an idle semaphore sets its limit; another limit while it has holders or waiters gets 409 limit_mismatch. FIFO: a larger request at the head blocks smaller ones behind it. Without session_id a new session is opened.', tags: ['semaphores'], params: [SEM_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'SemaphoreAcquireRequest', required: true, example: { limit: 4, permits: 1, wait_ms: 30000 } }, ok: { status: 200, schema: 'SemaphoreGrant', example: { name: 'db/pool', session_id: 's-4fzq9c2k', permits: 1, limit: 4, fencing_token: 1042, ttl_ms: 10000 } }, errors: errors('permission_denied', 'session_not_found', 'limit_mismatch', 'semaphore_full', 'deadlock', 'unsupported_media_type', 'payload_too_large', 'too_many_requests', 'unavailable', 'timeout') }),
    },
    '/v1/semaphores/{name}/revoke': {
      post: operation('revokeSemaphore', { summary: "take a semaphore's grants away (the admin right)", description: "Frees session_id's permits, or every holder's without it, at once; the next waiters are granted with larger tokens. The holder's session stays alive.", tags: ['semaphores'], params: [SEM_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'RevokeRequest', required: false, example: {} }, ok: { status: 200, schema: 'Revoked', example: { name: 'db/pool', revoked: [{ session_id: 's-4fzq9c2k', fencing_token: 1042 }] } }, errors: errors('permission_denied', 'session_not_found', 'not_holder', 'unsupported_media_type', 'unavailable', 'timeout') }),
    },
    '/v1/semaphores/{name}/limit': {
      put: operation('setSemaphoreLimit', { summary: 'resize a semaphore; shrinking never takes permits away', tags: ['semaphores'], params: [SEM_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'SemaphoreLimitRequest', required: true, example: { limit: 8 } }, ok: { status: 200, schema: 'SemaphoreLimit', example: { name: 'db/pool', limit: 8 } }, errors: errors('permission_denied', 'unsupported_media_type', 'unavailable', 'timeout') }),
    },
    '/v1/semaphores/{name}/release': {
      post: operation('releaseSemaphore', { summary: "give this session's permits back", tags: ['semaphores'], params: [SEM_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'SemaphoreReleaseRequest', required: true, example: { session_id: 's-4fzq9c2k' } }, ok: { status: 200, schema: 'Released', example: { name: 'db/pool', released: true } }, errors: errors('permission_denied', 'session_not_found', 'not_holder', 'unsupported_media_type', 'unavailable', 'timeout') }),
    },
    '/v1/watch': {
      get: operation('watch', { summary: 'server-sent events of every applied change under a prefix, in log order (this node\'s own feed)', description: 'Each event: id (the log index), event (acquired, released, expired, waiting, limit, …), data (JSON: kind, name, session_id, fencing_token?, mode?, permits?, limit?, reason?, index). Without from_index (or a Last-Event-ID header) the stream opens with one state event per current holder and a frame holding only the id of that snapshot; with it, it resumes after that index if this node still keeps it (events_retained), else 410 compacted. A comment line every 15 s. docs/api.md "Watch".', tags: ['watch'], params: queryParams(querySchemas.watch), ok: { status: 200, contentType: 'text/event-stream', description: 'an endless stream of events' }, errors: errors('permission_denied', 'compacted', 'too_many_requests', 'unavailable') }),
    },
    '/v1/elections/{name}': {
      get: operation('getElection', { summary: "read an election: its leader and the leader's value (linearizable; ?consistency=stale answers locally)", tags: ['elections'], params: [ELECTION_NAME_PARAM, ...queryParams(querySchemas.read)], ok: { status: 200, schema: 'Election', example: { name: 'svc/primary', leader: { session_id: 's-4fzq9c2k', value: 'http://10.0.0.7:8080', fencing_token: 1042 } } }, errors: errors('permission_denied', 'unavailable', 'timeout') }),
    },
    '/v1/elections/{name}/campaign': {
      post: operation('campaign', { summary: 'become leader, waiting FIFO up to wait_ms', description: "An exclusive acquire of the lock {name} whose grant publishes value (up to 4 KiB of UTF-8). Without session_id a new session is opened. A campaign by the leader answers its leadership (its value unchanged). wait_ms ran out: 409 lock_held with the current leader.", tags: ['elections'], params: [ELECTION_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'CampaignRequest', required: true, example: { value: 'http://10.0.0.7:8080', wait_ms: 30000 } }, ok: { status: 200, schema: 'Campaign', example: { name: 'svc/primary', session_id: 's-4fzq9c2k', value: 'http://10.0.0.7:8080', fencing_token: 1042, ttl_ms: 10000 } }, errors: errors('permission_denied', 'session_not_found', 'lock_held', 'deadlock', 'unsupported_media_type', 'payload_too_large', 'too_many_requests', 'unavailable', 'timeout') }),
    },
    '/v1/elections/{name}/proclaim': {
      post: operation('proclaim', { summary: 'the leader changes its value; anyone else gets 409 not_holder', tags: ['elections'], params: [ELECTION_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'ProclaimRequest', required: true, example: { session_id: 's-4fzq9c2k', value: 'http://10.0.0.8:8080' } }, ok: { status: 200, schema: 'Proclaimed', example: { name: 'svc/primary', value: 'http://10.0.0.8:8080' } }, errors: errors('permission_denied', 'session_not_found', 'not_holder', 'unsupported_media_type', 'payload_too_large', 'unavailable', 'timeout') }),
    },
    '/v1/elections/{name}/resign': {
      post: operation('resign', { summary: 'step down; the next candidate leads (a waiting candidate withdraws)', tags: ['elections'], params: [ELECTION_NAME_PARAM, IDEMPOTENCY_PARAM], body: { schema: 'ResignRequest', required: true, example: { session_id: 's-4fzq9c2k' } }, ok: { status: 200, schema: 'Resigned', example: { name: 'svc/primary', resigned: true } }, errors: errors('permission_denied', 'session_not_found', 'not_holder', 'unsupported_media_type', 'unavailable', 'timeout') }),
    },
    '/v1/cluster': {
      get: operation('cluster', { summary: "this node's view of the cluster", tags: ['cluster'], ok: { status: 200, schema: 'ClusterView' }, errors: errors('permission_denied') }),
    },
    '/v1/cluster/members': {
      post: operation('addMember', { summary: 'add a node as a learner; answers once that is committed (the node need not run yet); the leader promotes it to voter by itself once caught up (promotion_pending)', tags: ['cluster'], body: { schema: 'AddMemberRequest', required: true, example: { id: 'n4', api: 'http://10.0.0.4:7001', peer: 'http://10.0.0.4:7101' } }, ok: { status: 200, schema: 'ClusterView' }, errors: errors('permission_denied', 'conflict', 'unavailable', 'timeout') }),
    },
    '/v1/cluster/members/{id}': {
      delete: operation('removeMember', { summary: 'remove a node', tags: ['cluster'], params: [MEMBER_ID_PARAM], ok: { status: 200, schema: 'ClusterView' }, errors: errors('permission_denied', 'not_found', 'conflict', 'unavailable', 'timeout') }),
    },
    '/v1/cluster/members/{id}/promote': {
      post: operation('promoteMember', { summary: 'promote a caught-up learner to voter', tags: ['cluster'], params: [MEMBER_ID_PARAM], ok: { status: 200, schema: 'ClusterView' }, errors: errors('permission_denied', 'not_found', 'conflict', 'unavailable', 'timeout') }),
    },
    '/v1/cluster/transfer-leadership': {
      post: operation('transferLeadership', { summary: 'hand leadership over', tags: ['cluster'], body: { schema: 'TransferRequest', required: false, example: { to: 'n2' } }, ok: { status: 200, schema: 'TransferResult', example: { leader_id: 'n2' } }, errors: errors('permission_denied', 'unavailable', 'timeout') }),
    },
    '/v1/status': {
      get: operation('status', { summary: 'what the status page shows: members, leader history, held locks (stale read from this node)', tags: ['operations'], ok: { status: 200, schema: 'Status' }, errors: errors('permission_denied') }),
    },
    '/v1/snapshot': {
      get: operation('snapshot', { summary: 'a backup file: the leader\'s application snapshot after a read barrier (admin)', description: 'Format: docs/operations.md "Backup file". `raftlock snapshot save FILE` calls this.', tags: ['operations'], ok: { status: 200, contentType: 'application/octet-stream', description: 'the backup file' }, errors: errors('permission_denied', 'unavailable', 'timeout') }),
    },
    '/healthz': { get: operation('healthz', { summary: '200 while the process serves', tags: ['operations'], ok: { status: 200, schema: 'Health' }, errors: {}, open: true }) },
    '/readyz': { get: operation('readyz', { summary: '200 when the node knows a leader and has applied what it knows committed', tags: ['operations'], ok: { status: 200, schema: 'Health' }, errors: errorResponses(['unavailable']), open: true }) },
    '/metrics': { get: operation('metrics', { summary: 'Prometheus text format', tags: ['operations'], ok: { status: 200, contentType: 'text/plain' }, errors: errors('permission_denied') }) },
  };

  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'raftlock',
      version,
      description: 'A distributed lock service on Raft: TTL sessions, fencing tokens, FIFO waiters. Any node accepts any request; followers relay to the leader. Every error is the Error schema; 429 and 503 carry Retry-After.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/', description: 'the node that served this document (any node serves every request)' }],
    tags: [
      { name: 'sessions', description: 'TTL leases; a session holds locks' },
      { name: 'locks', description: 'acquire, renew, release, read, check a fencing token' },
      { name: 'semaphores', description: 'counted permits with FIFO waiters' },
      { name: 'elections', description: 'leader election: a lock whose holder publishes a value' },
      { name: 'cluster', description: 'membership and leadership' },
      { name: 'operations', description: 'health, metrics, status, backups' },
    ],
    security: [{ bearer: [] }, {}],
    components: {
      schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'needed when the cluster has auth on (tokens.json)' } },
    },
    paths,
  };
}
