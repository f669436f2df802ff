// Semaphores (docs/contract.md §4 "Semaphores"). Names follow the lock-name rules and may
// contain "/", so, as for locks (routes/locks.ts), one wildcard route splits the raw path:
// the last raw segment is the action when it is acquire|release|limit|revoke. The rights are a
// lock's: `lock` on the name to acquire, release or resize, `read` to look, `admin` to revoke.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalid } from '../errors.js';
import { mapOk } from '../service-result.js';
import { DEFAULT_LIST_LIMIT, parseBody, parseQuery, querySchemas } from '../validate.js';
import { onLeader, type RoutePluginOptions } from './context.js';
import { namePrefix, parseNamedPath } from './named-path.js';

const ACTIONS = new Set(['acquire', 'release', 'limit', 'revoke'] as const);
const METHOD = { get: 'GET', acquire: 'POST', release: 'POST', limit: 'PUT', revoke: 'POST' } as const;

export async function semaphoreRoutes(app: FastifyInstance, { env }: RoutePluginOptions): Promise<void> {
  const { service, schemas } = env;

  // the list, as GET /v1/locks (routes/locks.ts): the same query, right and read rules
  app.get('/v1/semaphores', async (req, reply) => {
    req.routeLabel = '/v1/semaphores';
    const q = parseQuery(querySchemas.list, req.query);
    const sems = service.semaphores;
    if (sems === undefined) throw new ApiError('not_found', 'this node does not serve semaphores');
    const prefix = namePrefix(q.prefix);
    const consistency = q.consistency ?? 'linearizable';
    return onLeader(env, req, reply, { right: 'read', name: prefix, stale: consistency === 'stale' }, async (ctx) =>
      mapOk(await sems.list(prefix, q.limit ?? DEFAULT_LIST_LIMIT, consistency, ctx), (semaphores) => ({ semaphores })),
    );
  });
  const handle = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const { name, action } = parseNamedPath(req.raw.url ?? '', '/v1/semaphores/', ACTIONS, 'semaphore');
    req.routeLabel = action === 'get' ? '/v1/semaphores/{name}' : `/v1/semaphores/{name}/${action}`;
    if (req.method !== METHOD[action]) throw new ApiError('not_found', `no route ${req.method} ${req.routeLabel}`);
    const sems = service.semaphores;
    if (sems === undefined) throw new ApiError('not_found', 'this node does not serve semaphores');
    switch (action) {
      case 'get': {
        const q = parseQuery(querySchemas.read, req.query);
        const consistency = q.consistency ?? 'linearizable';
        return onLeader(env, req, reply, { right: 'read', name, stale: consistency === 'stale' }, (ctx) => sems.get(name, consistency, ctx));
      }
      case 'acquire': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.semAcquire, req.body, false);
        const permits = b.permits ?? 1;
        if (permits > b.limit) throw invalid('body.permits', `must be at most limit (${b.limit}), got ${permits}`);
        const waitMs = b.wait_ms ?? 0;
        return onLeader(env, req, reply, { right: 'lock', name, waitMs, op: 'acquire' }, (ctx) =>
          sems.acquire(name, { sessionId: b.session_id, ttlMs: b.ttl_ms, limit: b.limit, permits, waitMs, owner: b.owner, ...(b.max_hold_ms !== undefined ? { maxHoldMs: b.max_hold_ms } : {}) }, ctx),
        );
      }
      case 'release': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.semRelease, req.body, false);
        return onLeader(env, req, reply, { right: 'lock', name }, (ctx) => sems.release(name, b.session_id, ctx));
      }
      case 'limit': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.semLimit, req.body, false);
        return onLeader(env, req, reply, { right: 'lock', name }, (ctx) => sems.setLimit(name, b.limit, ctx));
      }
      case 'revoke': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.revoke, req.body, true);
        const revoke = sems.revoke?.bind(sems);
        if (revoke === undefined) throw new ApiError('not_found', 'this node does not serve revocation');
        return onLeader(env, req, reply, { right: 'admin', name }, (ctx) => revoke(name, b.session_id, ctx));
      }
    }
  };
  app.route({ method: ['GET', 'POST', 'DELETE', 'PUT', 'PATCH'], url: '/v1/semaphores/*', handler: handle });
}
