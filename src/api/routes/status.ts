// GET /v1/status: everything the status page shows, from the node that answers (any node,
// also one without a leader — that is when an operator needs it most). Locks and counts
// are this node's applied state (a stale read: no quorum round per page refresh); the
// members' roles and indexes are each member's own answer.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';
import type { MemberProbe } from '../member-probe.js';
import type { OpsService } from '../ops-service.js';
import { parseQuery, querySchemas } from '../validate.js';
import type { RouteEnv } from './context.js';

/** the page lists at most this many locks (the counts are exact) */
export const STATUS_MAX_LOCKS = 500;

export function statusRoutes(app: FastifyInstance, env: RouteEnv, ops: OpsService | undefined, probe: MemberProbe): void {
  app.get('/v1/status', async (req) => {
    parseQuery(querySchemas.none, req.query);
    // every lock name shows up: the token needs read over the whole name space
    env.authorize?.({ authorization: req.headers.authorization, right: 'read', name: '' });
    if (!ops) throw new ApiError('not_found', 'this server has no status source');
    const signal = req.abortController.signal;
    const local = env.service.cluster();
    const [{ leaderId, members }, locks] = await Promise.all([
      probe.members(local, req.headers.authorization, signal),
      env.service.listLocks('', STATUS_MAX_LOCKS + 1, 'stale', { signal }),
    ]);
    const observations = ops.observations();
    const held = locks.filter((l) => l.held && l.holder).slice(0, STATUS_MAX_LOCKS);
    return {
      generated_at_ms: Date.now(),
      node: local,
      leader_id: leaderId,
      members,
      observations,
      locks: held.map((l) => {
        const h = l.holder!;
        const since = ops.heldSince(l.name, h.fencing_token);
        return { name: l.name, session_id: h.session_id, owner: h.owner, fencing_token: h.fencing_token, waiters: l.waiters, held_since_ms: since.since_ms, held_since_exact: since.exact };
      }),
      locks_truncated: locks.length > STATUS_MAX_LOCKS,
    };
  });
}
