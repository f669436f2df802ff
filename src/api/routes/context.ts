// What every route shares: the service, the forwarder, validation schemas and the one
// place that decides "serve here, or relay to the leader". Each file of routes/ is one
// fastify plugin: src/api/server.ts registers them after the hooks, parsers and error
// handlers every route inherits.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { answerOf } from '../failure-edge.js';
import { Forwarder, type ForwardOptions } from '../forward.js';
import type { LeaderOp, LockService, RequestContext } from '../service.js';
import type { Result } from '../service-result.js';
import { idempotencyKey, type BodySchemas } from '../validate.js';

/** Rights of docs/contract.md §2 "cluster.config.json" `tokens.json`; `admin` covers cluster operations. */
export type Right = 'read' | 'lock' | 'admin';
/** Optional auth hook (the auth module implements it): returns the principal (token name)
 *  or throws ApiError 401/403. `name` is the lock name or list prefix the request touches. */
export type Authorizer = (a: { authorization: string | undefined; right: Right; name?: string }) => string | undefined;

export interface RouteEnv {
  service: LockService;
  forwarder: Forwarder;
  schemas: BodySchemas;
  authorize?: Authorizer;
}

/** What buildServer passes every route plugin (app.register(lockRoutes, { env })); a
 *  plugin that needs more takes these and its own fields. */
export interface RoutePluginOptions {
  env: RouteEnv;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** route TEMPLATE for metrics and logs, never the raw URL (bounded label cardinality) */
    routeLabel: string;
    /** aborted when the client goes away or the server closes; made on first use
     *  (src/api/server.ts installLifecycle) */
    readonly abortController: AbortController;
    /** internal to installLifecycle: the response whose 'close' aborts the controller,
     *  and the controller once made */
    rawResponse: import('node:http').ServerResponse | null;
    abortArmed: AbortController | null;
  }
}

export interface ServeOptions {
  right: Right;
  /** lock name or prefix for the auth hook */
  name?: string;
  /** more lock names the request touches (a lock set): each needs the right too */
  names?: readonly string[];
  /** `?consistency=stale`: answer from local state on any node */
  stale?: boolean;
  /** the request's wait_ms, to size the forwarding timeout */
  waitMs?: number;
  /** an operation that may run longer on the leader than a plain proposal: the relay
   *  waits for the leader's own budget of it (LockService.leaderBudgetMs) */
  op?: LeaderOp;
}

/** forwarding options of a request: its wait_ms and the leader's own budget for `op` */
export function forwardOptions(env: RouteEnv, o: Pick<ServeOptions, 'waitMs' | 'op'>): ForwardOptions {
  const out: ForwardOptions = {};
  if (o.waitMs !== undefined) out.waitMs = o.waitMs;
  const leaderMs = o.op !== undefined ? env.service.leaderBudgetMs?.(o.op, o.waitMs ?? 0) : undefined;
  if (leaderMs !== undefined) out.leaderMs = leaderMs;
  return out;
}

/**
 * Run `fn` on the leader. On a follower, relay the HTTP request to the leader instead
 * (after local validation, so bad input never costs a hop). Returns the value of fn's
 * Result, or the reply when the answer was relayed; a refusal is mapped to its HTTP error
 * here, for every route (failure-edge.ts answerOf).
 */
export async function onLeader<T>(env: RouteEnv, req: FastifyRequest, reply: FastifyReply, o: ServeOptions, fn: (ctx: RequestContext) => Promise<Result<T>>): Promise<T | FastifyReply> {
  const principal = env.authorize?.({ authorization: req.headers.authorization, right: o.right, ...(o.name !== undefined ? { name: o.name } : {}) });
  for (const name of o.names ?? []) env.authorize?.({ authorization: req.headers.authorization, right: o.right, name });
  const key = idempotencyKey(req.headers['idempotency-key']);
  if (!o.stale) {
    const r = env.service.routing();
    if (!r.isLeader) {
      if (Forwarder.isForwarded(req)) throw new ApiError('unavailable', 'this node is not the leader and the request was already forwarded once');
      if (!r.leaderApi) throw new ApiError('unavailable', 'no leader known; retry shortly');
      await env.forwarder.forward(req, reply, r.leaderApi, req.abortController.signal, forwardOptions(env, o));
      return reply;
    }
  }
  return answerOf(await fn(new LeaderRequestContext(req, key, principal)));
}

/**
 * The RequestContext of a request served here. Its signal is made on first use: most
 * requests never wait, and creating the AbortSignal showed up at ~3% of the leader's CPU
 * under keepalive load.
 *
 * A class, not an object literal with a `get signal()`: V8 makes the accessor of a
 * literal's getter (its AccessorPair, one per request) in the old generation, pointing at
 * the getter's closure and so at the request. Until the next full collection that dead
 * pair kept the whole request (headers, response, closures: ~3.2 KB) alive through every
 * scavenge, which promoted it; a scavenge took 10 ms instead of 0.6 and the REST layer
 * spent 2.3× bare fastify's CPU per request instead of 1.5× (BENCHMARKS.md "Tenth round").
 * A getter on the prototype is made once. test/api/request-context-gc.test.ts keeps it so.
 */
export class LeaderRequestContext implements RequestContext {
  readonly idempotencyKey: string | undefined;
  readonly principal: string | undefined;
  readonly #req: FastifyRequest;

  constructor(req: FastifyRequest, idempotencyKey: string | undefined, principal: string | undefined) {
    this.#req = req;
    this.idempotencyKey = idempotencyKey;
    this.principal = principal;
  }

  get signal(): AbortSignal {
    return this.#req.abortController.signal;
  }
}
