// Cluster operations (docs/contract.md §3 "Operations", docs/membership.md). The service
// answers a Result (src/server/membership/cluster-ops.ts), which onLeader maps. GET
// /v1/cluster is this node's own view and is answered locally on any node (that is its
// point: see who this node thinks leads). Membership changes and leadership transfer run on
// the leader.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { Failure } from '../failure.js';
import { Forwarder } from '../forward.js';
import type { LeaderOp, RequestContext } from '../service.js';
import type { Result } from '../service-result.js';
import { assertMemberId, parseBody, parseQuery, querySchemas } from '../validate.js';
import { forwardOptions, onLeader, type RouteEnv, type RoutePluginOptions } from './context.js';

export async function clusterRoutes(app: FastifyInstance, { env }: RoutePluginOptions): Promise<void> {
  const { service, schemas } = env;

  app.get('/v1/cluster', async (req) => {
    parseQuery(querySchemas.none, req.query);
    env.authorize?.({ authorization: req.headers.authorization, right: 'read' });
    return service.cluster();
  });

  app.post('/v1/cluster/members', async (req, reply) => {
    parseQuery(querySchemas.none, req.query);
    const b = parseBody(schemas.addMember, req.body, false);
    const m = { id: b.id, api: b.api.replace(/\/$/, ''), peer: b.peer.replace(/\/$/, ''), ...(b.learner !== undefined ? { learner: b.learner } : {}) };
    return onLeaderFollowing(env, req, reply, 'addMember', (ctx) => service.addMember(m, ctx));
  });

  app.post<{ Params: { id: string } }>('/v1/cluster/members/:id/promote', async (req, reply) => {
    const id = assertMemberId(req.params.id);
    parseQuery(querySchemas.none, req.query);
    parseBody(schemas.empty, req.body, true);
    const promote = service.promoteMember?.bind(service);
    if (!promote) throw new ApiError('not_found', 'this server does not support promoting learners');
    return onLeaderFollowing(env, req, reply, 'promoteMember', (ctx) => promote(id, ctx));
  });

  app.delete<{ Params: { id: string } }>('/v1/cluster/members/:id', async (req, reply) => {
    const id = assertMemberId(req.params.id);
    parseQuery(querySchemas.none, req.query);
    parseBody(schemas.empty, req.body, true);
    return onLeaderFollowing(env, req, reply, 'removeMember', (ctx) => service.removeMember(id, ctx));
  });

  app.post('/v1/cluster/transfer-leadership', async (req, reply) => {
    parseQuery(querySchemas.none, req.query);
    const b = parseBody(schemas.transfer, req.body, true);
    return onLeader(env, req, reply, { right: 'admin', op: 'transferLeadership' }, (ctx) => service.transferLeadership(b.to, ctx));
  });
}

/**
 * Run a membership change on the leader. If leadership moves while it runs — a leader
 * asked to remove itself hands leadership over first; a leader can lose office while a
 * learner catches up — the request follows the new leader once (the changes are
 * idempotent: a learner already added is found and promoted, a removal that was never
 * proposed is simply made there).
 */
async function onLeaderFollowing<T>(env: RouteEnv, req: FastifyRequest, reply: FastifyReply, op: LeaderOp, fn: (ctx: RequestContext) => Promise<Result<T>>): Promise<T | FastifyReply> {
  try {
    return await onLeader(env, req, reply, { right: 'admin', op }, fn);
  } catch (err) {
    if (!(err instanceof Failure) || err.code !== 'unavailable' || Forwarder.isForwarded(req) || reply.sent || req.abortController.signal.aborted) throw err;
    let r;
    try {
      r = env.service.routing();
    } catch {
      throw err;
    }
    if (r.isLeader || !r.leaderApi) throw err;
    await env.forwarder.forward(req, reply, r.leaderApi, req.abortController.signal, forwardOptions(env, { op }));
    return reply;
  }
}
