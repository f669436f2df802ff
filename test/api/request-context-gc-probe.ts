// Run by request-context-gc.test.ts in a child started with --expose-gc: how many bytes of
// 500 dead requests are still in the heap after two scavenges, when each request went
// through onLeader (which hands the service a RequestContext), or made the object literal
// with a getter that onLeader made before. Prints one JSON line.
import { getHeapSpaceStatistics } from 'node:v8';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { onLeader, type RouteEnv } from '../../src/api/routes/context.js';
import type { RequestContext } from '../../src/api/service.js';
import { ok } from '../../src/api/service-result.js';

type Gc = (o?: { type: 'minor' | 'major' }) => void;
const gc = (globalThis as { gc?: Gc }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

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

function heapUsed(): number {
  let n = 0;
  for (const s of getHeapSpaceStatistics()) if (s.space_name === 'new_space' || s.space_name === 'old_space') n += s.space_used_size;
  return n;
}

/** bytes of the requests' ~32 KiB bodies that two scavenges did not free: large enough that
 *  what the optimizing compiler allocates meanwhile (up to ~0.3 MB) is noise */
async function survivingBytes(make: (req: FastifyRequest) => Promise<RequestContext>): Promise<number> {
  gc!();
  gc!({ type: 'minor' });
  const before = heapUsed();
  for (let i = 0; i < REQUESTS; i++) {
    const signal = { i } as unknown as AbortSignal;
    const req = { headers: {}, abortController: { signal }, body: new Array<number>(4096).fill(i) } as unknown as FastifyRequest;
    if ((await make(req)).signal !== signal) throw new Error('the context does not answer its request\'s signal');
  }
  gc!({ type: 'minor' });
  gc!({ type: 'minor' });
  return heapUsed() - before;
}

// Three trials each, the smallest kept: a trial can be disturbed, not made smaller. onLeader
// first: the control keeps every request, and V8 learns from that to allocate this loop's
// objects straight into the old generation (allocation-site pretenuring), which a trial
// after it counts as kept, in some runs (BENCHMARKS.md "Tenth round").
async function trials(make: (req: FastifyRequest) => Promise<RequestContext>): Promise<number> {
  return Math.min(await survivingBytes(make), await survivingBytes(make), await survivingBytes(make));
}
const leaderBytes = await trials(viaOnLeader);
const literalBytes = await trials(literal);
process.stdout.write(`${JSON.stringify({ requests: REQUESTS, literal: literalBytes, leader: leaderBytes })}\n`);
