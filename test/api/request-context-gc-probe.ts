// Run by request-context-gc.test.ts in a child started with --expose-gc: how many bytes of
// 2,000 dead requests are still in the heap after two scavenges, when each request made a
// a RequestContext, as onLeader makes it or as an object literal with a getter. Prints one
// JSON line.
import { getHeapSpaceStatistics } from 'node:v8';
import type { FastifyRequest } from 'fastify';
import type { FastifyReply } from 'fastify';
import { onLeader, type RouteEnv } from '../../src/api/routes/context.js';
import type { RequestContext } from '../../src/api/service.js';
import { ok } from '../../src/api/service-result.js';

type Gc = (o?: { type: 'minor' | 'major' }) => void;
const gc = (globalThis as { gc?: Gc }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

const REQUESTS = 2000;

/** the form onLeader used before: an object literal whose getter closes over the request */
const literal = (req: FastifyRequest): RequestContext => ({
  get signal() {
    return req.abortController.signal;
  },
});
/** the context onLeader hands a service on the leader */
const env = { service: { routing: () => ({ isLeader: true, leaderApi: null }) } } as unknown as RouteEnv;
async function leader(req: FastifyRequest): Promise<RequestContext> {
  let seen: RequestContext | undefined;
  await onLeader(env, req, {} as FastifyReply, { right: 'lock' }, async (ctx) => {
    seen = ctx;
    return ok(null);
  });
  return seen!;
}

function heapUsed(): number {
  let n = 0;
  for (const s of getHeapSpaceStatistics()) if (s.space_name === 'new_space' || s.space_name === 'old_space') n += s.space_used_size;
  return n;
}

/** bytes of the requests' ~1 KiB bodies that two scavenges did not free */
async function survivingBytes(make: (req: FastifyRequest) => RequestContext | Promise<RequestContext>): Promise<number> {
  gc!();
  gc!({ type: 'minor' });
  const before = heapUsed();
  for (let i = 0; i < REQUESTS; i++) {
    const signal = { i } as unknown as AbortSignal;
    const req = { headers: {}, abortController: { signal }, body: new Array<number>(128).fill(i) } as unknown as FastifyRequest;
    if ((await make(req)).signal !== signal) throw new Error('the context does not answer its request\'s signal');
  }
  gc!({ type: 'minor' });
  gc!({ type: 'minor' });
  return heapUsed() - before;
}

// three trials each, the smallest kept: a trial can be disturbed, not made smaller
async function trials(make: (req: FastifyRequest) => RequestContext | Promise<RequestContext>): Promise<number> {
  return Math.min(await survivingBytes(make), await survivingBytes(make), await survivingBytes(make));
}
process.stdout.write(`${JSON.stringify({ requests: REQUESTS, literal: await trials(literal), leader: await trials(leader) })}\n`);
