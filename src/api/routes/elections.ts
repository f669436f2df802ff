// Leader election (docs/contract.md §4 "Leader election"). An election is a lock whose
// holder publishes a value, so its name follows the lock-name rules and may contain "/":
// as for locks (routes/locks.ts), one wildcard route splits the raw path, the last raw
// segment being the action when it is campaign|proclaim|resign. The rights are a lock's:
// `lock` on the name to campaign, proclaim or resign, `read` to look.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { parseBody, parseQuery, querySchemas } from '../validate.js';
import { onLeader, type RoutePluginOptions } from './context.js';
import { parseNamedPath } from './named-path.js';

const ACTIONS = new Set(['campaign', 'proclaim', 'resign'] as const);

export async function electionRoutes(app: FastifyInstance, { env }: RoutePluginOptions): Promise<void> {
  const { service, schemas } = env;
  const handle = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const { name, action } = parseNamedPath(req.raw.url ?? '', '/v1/elections/', ACTIONS, 'election');
    req.routeLabel = action === 'get' ? '/v1/elections/{name}' : `/v1/elections/{name}/${action}`;
    if (req.method !== (action === 'get' ? 'GET' : 'POST')) throw new ApiError('not_found', `no route ${req.method} ${req.routeLabel}`);
    const elections = service.elections;
    if (elections === undefined) throw new ApiError('not_found', 'this node does not serve elections');
    switch (action) {
      case 'get': {
        const q = parseQuery(querySchemas.read, req.query);
        const consistency = q.consistency ?? 'linearizable';
        return onLeader(env, req, reply, { right: 'read', name, stale: consistency === 'stale' }, (ctx) => elections.get(name, consistency, ctx));
      }
      case 'campaign': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.campaign, req.body, false);
        const waitMs = b.wait_ms ?? 0;
        return onLeader(env, req, reply, { right: 'lock', name, waitMs, op: 'acquire' }, (ctx) =>
          elections.campaign(name, { sessionId: b.session_id, ttlMs: b.ttl_ms, value: b.value, waitMs, owner: b.owner, ...(b.max_hold_ms !== undefined ? { maxHoldMs: b.max_hold_ms } : {}) }, ctx),
        );
      }
      case 'proclaim': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.proclaim, req.body, false);
        return onLeader(env, req, reply, { right: 'lock', name }, (ctx) => elections.proclaim(name, b.session_id, b.value, ctx));
      }
      case 'resign': {
        parseQuery(querySchemas.none, req.query);
        const b = parseBody(schemas.resign, req.body, false);
        return onLeader(env, req, reply, { right: 'lock', name }, (ctx) => elections.resign(name, b.session_id, ctx));
      }
    }
  };
  app.route({ method: ['GET', 'POST', 'DELETE', 'PUT', 'PATCH'], url: '/v1/elections/*', handler: handle });
}
