// Cluster operations (spec §3 "Operations"). GET /v1/cluster is this node's own view and
// is answered locally on any node (that is its point: see who this node thinks leads).
// Membership changes and leadership transfer run on the leader.
import type { FastifyInstance } from 'fastify';
import { assertMemberId, parseBody, parseQuery, querySchemas } from '../validate.js';
import { onLeader, type RouteEnv } from './context.js';

export function clusterRoutes(app: FastifyInstance, env: RouteEnv): void {
  const { service, schemas } = env;

  app.get('/v1/cluster', async (req) => {
    parseQuery(querySchemas.none, req.query);
    env.authorize?.({ authorization: req.headers.authorization, right: 'read' });
    return service.cluster();
  });

  app.post('/v1/cluster/members', async (req, reply) => {
    parseQuery(querySchemas.none, req.query);
    const b = parseBody(schemas.addMember, req.body, false);
    return onLeader(env, req, reply, { right: 'admin' }, (ctx) => service.addMember({ id: b.id, api: b.api.replace(/\/$/, ''), peer: b.peer.replace(/\/$/, '') }, ctx));
  });

  app.delete<{ Params: { id: string } }>('/v1/cluster/members/:id', async (req, reply) => {
    const id = assertMemberId(req.params.id);
    parseQuery(querySchemas.none, req.query);
    parseBody(schemas.empty, req.body, true);
    return onLeader(env, req, reply, { right: 'admin' }, (ctx) => service.removeMember(id, ctx));
  });

  app.post('/v1/cluster/transfer-leadership', async (req, reply) => {
    parseQuery(querySchemas.none, req.query);
    const b = parseBody(schemas.transfer, req.body, true);
    return onLeader(env, req, reply, { right: 'admin' }, (ctx) => service.transferLeadership(b.to, ctx));
  });
}
