// Run by request-context-gc.test.ts in a child started with --expose-gc: how many bytes of
// 500 dead requests are still in the heap after two scavenges, when each request went
// through onLeader (which hands the service a RequestContext), or made the object literal
// with a getter that onLeader made before. Prints one JSON line.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { onLeader, type RouteEnv } from '../../src/api/routes/context.js';
import type { RequestContext } from '../../src/api/service.js';
import { ok } from '../../src/api/service-result.js';
import { bytesLeftAfterScavenges } from '../support/heap-probe.js';

const REQUESTS = 500;

/** the context onLeader hands a service on the leader */
const env = { service: { routing: () => ({ isLeader: true, leaderApi: null }) } } as unknown as RouteEnv;
async function viaOnLeader(req: FastifyRequest): Promise<RequestContext> {
  let seen: RequestContext | undefined;
  await onLeader(env, req, {} as FastifyReply, { right: 'lock' }, async (ctx) => {
    seen = ctx;
    return ok(null);
  });
  return seen!;
}
/** the control: what onLeader made before */
async function literal(req: FastifyRequest): Promise<RequestContext> {
  return {
    get signal() {
      return req.abortController.signal;
    },
  };
}

/** ~32 KiB of body per request: all 500 are ~16 MB, so what the optimizing compiler
 *  allocates meanwhile (up to ~0.3 MB) is noise */
async function makeRequests(make: (req: FastifyRequest) => Promise<RequestContext>): Promise<void> {
  for (let i = 0; i < REQUESTS; i++) {
    const signal = { i } as unknown as AbortSignal;
    const req = { headers: {}, abortController: { signal }, body: new Array<number>(4096).fill(i) } as unknown as FastifyRequest;
    if ((await make(req)).signal !== signal) throw new Error('the context does not answer its request\'s signal');
  }
}

// onLeader first, then the control (heap-probe.ts says why)
const leaderBytes = await bytesLeftAfterScavenges(() => makeRequests(viaOnLeader));
const literalBytes = await bytesLeftAfterScavenges(() => makeRequests(literal));
process.stdout.write(`${JSON.stringify({ requests: REQUESTS, literal: literalBytes, leader: leaderBytes })}\n`);
