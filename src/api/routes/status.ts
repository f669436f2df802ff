// GET /v1/status: everything the status page shows, from the node that answers (any node,
// also one without a leader — that is when an operator needs it most). Locks and counts
// are this node's applied state (a stale read: no quorum round per page refresh); the
// members' roles and indexes are each member's own answer.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';
import { answerOf } from '../failure-edge.js';
import type { MemberProbe } from '../member-probe.js';
import type { OpsService } from '../ops-service.js';
import { parseQuery, querySchemas } from '../validate.js';
import type { HolderView, LockView } from '../service.js';
import type { RoutePluginOptions } from './context.js';

/** the page lists at most this many locks, and this many semaphores (the counts are exact) */
export const STATUS_MAX_LOCKS = 500;
/** the "Most contended locks" table's length */
export const STATUS_CONTENDED = 10;

export async function statusRoutes(app: FastifyInstance, { env, ops, probe }: RoutePluginOptions & { ops?: OpsService | undefined; probe: MemberProbe }): Promise<void> {
  app.get('/v1/status', async (req) => {
    parseQuery(querySchemas.none, req.query);
    // every lock name shows up: the token needs read over the whole name space
    env.authorize?.({ authorization: req.headers.authorization, right: 'read', name: '' });
    if (!ops) throw new ApiError('not_found', 'this server has no status source');
    const signal = req.abortController.signal;
    const local = env.service.cluster();
    const [{ leaderId, members }, locks, sems, elections] = await Promise.all([
      probe.members(local, req.headers.authorization, signal),
      // stale reads, so without a leader too; a refusal is mapped as on every route
      env.service.listLocks('', STATUS_MAX_LOCKS + 1, 'stale', { signal }).then(answerOf),
      env.service.semaphores?.list('', STATUS_MAX_LOCKS + 1, 'stale', { signal }).then(answerOf) ?? Promise.resolve([]),
      env.service.elections?.list?.('', STATUS_MAX_LOCKS + 1, 'stale', { signal }).then(answerOf) ?? Promise.resolve([]),
    ]);
    const observations = ops.observations();
    // every holder, in grant order: one exclusive, or the shared holders (docs/contract.md §4)
    const holdersOf = (l: LockView): (HolderView & { mode: 'exclusive' | 'shared' })[] => l.holders ?? (l.holder ? [Object.assign({}, l.holder, { mode: 'exclusive' as const })] : []);
    const held = locks.filter((l) => l.held && holdersOf(l).length > 0).slice(0, STATUS_MAX_LOCKS);
    return {
      generated_at_ms: Date.now(),
      node: local,
      leader_id: leaderId,
      members,
      observations,
      locks: held.map((l) => {
        const holders = holdersOf(l).map((h) => {
          const since = ops.heldSince(l.name, h.fencing_token);
          return { session_id: h.session_id, owner: h.owner, fencing_token: h.fencing_token, held_since_ms: since.since_ms, held_since_exact: since.exact };
        });
        // the first holder's fields stay at the top, as before shared locks
        const first = holders[0]!;
        return { name: l.name, session_id: first.session_id, owner: first.owner, fencing_token: first.fencing_token, waiters: l.waiters, held_since_ms: first.held_since_ms, held_since_exact: first.held_since_exact, mode: holdersOf(l)[0]!.mode, holders };
      }),
      locks_truncated: locks.length > STATUS_MAX_LOCKS,
      semaphores: sems.slice(0, STATUS_MAX_LOCKS),
      semaphores_truncated: sems.length > STATUS_MAX_LOCKS,
      // elections with a leader: its session, value and token, and how many campaign behind it
      elections: elections.slice(0, STATUS_MAX_LOCKS),
      elections_truncated: elections.length > STATUS_MAX_LOCKS,
      // docs/contract.md §5 "Contention": who waits longest, and this node's grants per second
      contended: ops.contended?.(STATUS_CONTENDED) ?? [],
      activity: ops.activity?.() ?? [],
    };
  });
}
