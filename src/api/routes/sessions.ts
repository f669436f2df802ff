// Sessions (docs/contract.md §3 "Sessions (TTL leases)").
import type { FastifyInstance } from 'fastify';
import { assertSessionId, parseBody, parseQuery, querySchemas } from '../validate.js';
import { onLeader, type RoutePluginOptions } from './context.js';

export async function sessionRoutes(app: FastifyInstance, { env }: RoutePluginOptions): Promise<void> {
  const { service, schemas } = env;

  app.post('/v1/sessions', async (req, reply) => {
    parseQuery(querySchemas.none, req.query);
    const b = parseBody(schemas.openSession, req.body, true);
    return onLeader(env, req, reply, { right: 'lock' }, async (ctx) => {
      const r = await service.openSession({ ttlMs: b.ttl_ms, owner: b.owner, lockDelayMs: b.lock_delay_ms }, ctx);
      if (r.ok) reply.code(201);
      return r;
    });
  });

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/keepalive', async (req, reply) => {
    const id = assertSessionId(req.params.id);
    parseQuery(querySchemas.none, req.query);
    parseBody(schemas.empty, req.body, true);
    return onLeader(env, req, reply, { right: 'lock' }, (ctx) => service.keepalive(id, ctx));
  });

  app.get<{ Params: { id: string } }>('/v1/sessions/:id', async (req, reply) => {
    const id = assertSessionId(req.params.id);
    parseQuery(querySchemas.none, req.query);
    return onLeader(env, req, reply, { right: 'read' }, (ctx) => service.getSession(id, ctx));
  });

  app.delete<{ Params: { id: string } }>('/v1/sessions/:id', async (req, reply) => {
    const id = assertSessionId(req.params.id);
    parseQuery(querySchemas.none, req.query);
    parseBody(schemas.empty, req.body, true);
    return onLeader(env, req, reply, { right: 'lock' }, (ctx) => service.closeSession(id, ctx));
  });
}
