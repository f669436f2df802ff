// Locks (spec §3 "Locks"). Lock names may contain "/", so one wildcard route takes
// everything under /v1/locks/ and splits the RAW path itself: the last raw segment is the
// action when it is acquire|renew|release|check|revoke, every other segment belongs to the name.
// A "/" inside a name may be sent raw or as %2F; a name whose last segment is itself an
// action word must encode that slash (GET /v1/locks/jobs%2Fcheck reads lock "jobs/check").
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { invalid } from '../errors.js';
import { assertLockName, decodeSegment, DEFAULT_LIST_LIMIT, lockNameProblem, parseBody, parseQuery, querySchemas } from '../validate.js';
import { onLeader, type RoutePluginOptions } from './context.js';

const ACTIONS = new Set(['acquire', 'renew', 'release', 'check', 'revoke']);
type Action = 'get' | 'acquire' | 'renew' | 'release' | 'check' | 'revoke';

/** "/v1/locks/a/b%2Fc/acquire?x" → { name: "a/b/c", action: "acquire" } */
export function parseLockPath(rawUrl: string): { name: string; action: Action } {
  const path = rawUrl.split('?', 1)[0] ?? '';
  const rest = path.slice('/v1/locks/'.length);
  const segs = rest.split('/');
  let action: Action = 'get';
  if (segs.length > 1 && ACTIONS.has(segs[segs.length - 1] as string)) action = segs.pop() as Action;
  // Bound the work before decoding: a 256-byte name is at most 768 encoded bytes.
  if (rest.length > 3 * 256 + 16) throw invalid('path.name', 'lock name is longer than 256 bytes');
  const name = segs.map((s) => decodeSegment(s, 'path.name')).join('/');
  return { name: assertLockName(name), action };
}

export async function lockRoutes(app: FastifyInstance, { env }: RoutePluginOptions): Promise<void> {
  const { service, schemas } = env;

  app.get('/v1/locks', async (req, reply) => {
    req.routeLabel = '/v1/locks';
    const q = parseQuery(querySchemas.list, req.query);
    const prefix = q.prefix ?? '';
    if (prefix !== '') {
      const p = lockNameProblem(prefix, 'prefix');
      if (p) throw invalid('query.prefix', p);
    }
    const consistency = q.consistency ?? 'linearizable';
    return onLeader(env, req, reply, { right: 'read', name: prefix, stale: consistency === 'stale' }, async (ctx) => ({
      locks: await service.listLocks(prefix, q.limit ?? DEFAULT_LIST_LIMIT, consistency, ctx),
    }));
  });

  const handle = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const { name, action } = parseLockPath(req.raw.url ?? '');
    req.routeLabel = action === 'get' ? '/v1/locks/{name}' : `/v1/locks/{name}/${action}`;
    const method = req.method;
    const want = action === 'get' || action === 'check' ? 'GET' : 'POST';
    if (method !== want) throw new ApiError('not_found', `no route ${method} ${req.routeLabel}`);
    switch (action) {
      case 'get': {
        const q = parseQuery(querySchemas.read, req.query);
        const consistency = q.consistency ?? 'linearizable';
        return onLeader(env, req, reply, { right: 'read', name, stale: consistency === 'stale' }, (ctx) => service.getLock(name, consistency, ctx));
      }
      case 'check': {
        const q = parseQuery(querySchemas.check, req.query);
        return onLeader(env, req, reply, { right: 'read', name }, (ctx) => service.checkToken(name, q.fencing_token, ctx));
      }
      case 'acquire': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.acquire, req.body, true);
        const waitMs = b.wait_ms ?? 0;
        return onLeader(env, req, reply, { right: 'lock', name, waitMs, op: 'acquire' }, (ctx) =>
          service.acquire(name, { sessionId: b.session_id, ttlMs: b.ttl_ms, waitMs, owner: b.owner, ...(b.mode !== undefined ? { mode: b.mode } : {}), ...(b.max_hold_ms !== undefined ? { maxHoldMs: b.max_hold_ms } : {}) }, ctx),
        );
      }
      case 'renew': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.renew, req.body, false);
        return onLeader(env, req, reply, { right: 'lock', name }, (ctx) => service.renew(name, b.session_id, ctx));
      }
      case 'release': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.release, req.body, false);
        return onLeader(env, req, reply, { right: 'lock', name }, (ctx) => service.release(name, b.session_id, b.fencing_token, ctx));
      }
      case 'revoke': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.revoke, req.body, true);
        const revoke = service.revoke?.bind(service);
        if (revoke === undefined) throw new ApiError('not_found', 'this node does not serve revocation');
        // taking another session's grant away is an operator's act: the admin right on the name
        return onLeader(env, req, reply, { right: 'admin', name }, (ctx) => revoke(name, b.session_id, ctx));
      }
    }
  };
  app.route({ method: ['GET', 'POST', 'DELETE', 'PUT', 'PATCH'], url: '/v1/locks/*', handler: handle });
}
