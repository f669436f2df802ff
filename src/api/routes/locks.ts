// Locks (docs/contract.md §3 "Locks"). Lock names may contain "/", so one wildcard route takes
// everything under /v1/locks/ and splits the raw path (routes/named-path.ts): the last raw
// segment is the action when it is acquire|renew|release|check|revoke.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { mapOk } from '../service-result.js';
import { DEFAULT_LIST_LIMIT, parseBody, parseQuery, querySchemas } from '../validate.js';
import { onLeader, type RoutePluginOptions } from './context.js';
import { namePrefix, parseNamedPath } from './named-path.js';

const ACTIONS = new Set(['acquire', 'renew', 'release', 'check', 'revoke'] as const);

export async function lockRoutes(app: FastifyInstance, { env }: RoutePluginOptions): Promise<void> {
  const { service, schemas } = env;

  app.get('/v1/locks', async (req, reply) => {
    req.routeLabel = '/v1/locks';
    const q = parseQuery(querySchemas.list, req.query);
    const prefix = namePrefix(q.prefix);
    const consistency = q.consistency ?? 'linearizable';
    return onLeader(env, req, reply, { right: 'read', name: prefix, stale: consistency === 'stale' }, async (ctx) =>
      mapOk(await service.listLocks(prefix, q.limit ?? DEFAULT_LIST_LIMIT, consistency, ctx), (locks) => ({ locks })),
    );
  });

  const handle = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const { name, action } = parseNamedPath(req.raw.url ?? '', '/v1/locks/', ACTIONS, 'lock');
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

  // Lock sets (docs/contract.md §5 "Lock sets"). Static routes win over the wildcard above
  // for POST; any other method on these paths is the lock of that name, as before.
  const sets = (): NonNullable<typeof service.lockSets> => {
    if (service.lockSets === undefined) throw new ApiError('not_found', 'this node does not serve lock sets');
    return service.lockSets;
  };
  app.post('/v1/locks/acquire-all', async (req, reply) => {
    req.routeLabel = '/v1/locks/acquire-all';
    parseQuery(querySchemas.none, req.query);
    const b = parseBody(schemas.acquireAll, req.body, false);
    const waitMs = b.wait_ms ?? 0;
    const [first, ...rest] = b.names;
    return onLeader(env, req, reply, { right: 'lock', name: first, names: rest, waitMs, op: 'acquire' }, (ctx) =>
      sets().acquireAll(b.names, { sessionId: b.session_id, ttlMs: b.ttl_ms, waitMs, owner: b.owner, ...(b.mode !== undefined ? { mode: b.mode } : {}), ...(b.max_hold_ms !== undefined ? { maxHoldMs: b.max_hold_ms } : {}) }, ctx),
    );
  });
  app.post('/v1/locks/release-all', async (req, reply) => {
    req.routeLabel = '/v1/locks/release-all';
    parseQuery(querySchemas.none, req.query);
    const b = parseBody(schemas.releaseAll, req.body, false);
    const [first, ...rest] = b.names;
    return onLeader(env, req, reply, { right: 'lock', name: first, names: rest }, (ctx) => sets().releaseAll(b.names, b.session_id, ctx));
  });
}
