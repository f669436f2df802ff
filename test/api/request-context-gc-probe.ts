// Run by request-context-gc.test.ts in a child started with --expose-gc: how many bytes of
// 500 dead requests are still in the heap after two scavenges, when each request made a
// RequestContext: onLeader's LeaderRequestContext, or an object literal with a getter
// (what onLeader made before). Prints one JSON line.
import { getHeapSpaceStatistics } from 'node:v8';
import type { FastifyRequest } from 'fastify';
import { LeaderRequestContext } from '../../src/api/routes/context.js';
import type { RequestContext } from '../../src/api/service.js';

type Gc = (o?: { type: 'minor' | 'major' }) => void;
const gc = (globalThis as { gc?: Gc }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

const REQUESTS = 500;

const literal = (req: FastifyRequest): RequestContext => ({
  get signal() {
    return req.abortController.signal;
  },
});
const leader = (req: FastifyRequest): RequestContext => new LeaderRequestContext(req, undefined, undefined);

function heapUsed(): number {
  let n = 0;
  for (const s of getHeapSpaceStatistics()) if (s.space_name === 'new_space' || s.space_name === 'old_space') n += s.space_used_size;
  return n;
}

/** bytes of the requests' ~32 KiB bodies that two scavenges did not free: large enough that
 *  what the optimizing compiler allocates meanwhile (up to ~0.3 MB) is noise. Synchronous:
 *  an async loop under CPU load sometimes kept a third of them either way (not understood;
 *  BENCHMARKS.md "Tenth round"), which would make this test flaky, not stricter. */
function survivingBytes(make: (req: FastifyRequest) => RequestContext): number {
  gc!();
  gc!({ type: 'minor' });
  const before = heapUsed();
  for (let i = 0; i < REQUESTS; i++) {
    const signal = { i } as unknown as AbortSignal;
    const req = { abortController: { signal }, body: new Array<number>(4096).fill(i) } as unknown as FastifyRequest;
    if (make(req).signal !== signal) throw new Error('the context does not answer its request\'s signal');
  }
  gc!({ type: 'minor' });
  gc!({ type: 'minor' });
  return heapUsed() - before;
}

// three trials each, the smallest kept: a trial can be disturbed, not made smaller
const trials = (make: (req: FastifyRequest) => RequestContext): number => Math.min(survivingBytes(make), survivingBytes(make), survivingBytes(make));
process.stdout.write(`${JSON.stringify({ requests: REQUESTS, literal: trials(literal), leader: trials(leader) })}\n`);
