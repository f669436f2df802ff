// The server half of bench/http/main.ts, in a child process so its CPU is measured alone.
//   node --import tsx bench/http/server.ts ours|bare
// ours: raftlock's REST server (src/api/server.ts: hooks, validation, auth, metrics,
//       routing) around a service that answers at once, so what is measured is the HTTP
//       layer and nothing behind it;
// bare: fastify with the same three routes and answers, no hooks, no validation, no
//       metrics: the floor fastify itself sets on this machine.
// It tells the parent its port, then answers 'cpu' messages with process.cpuUsage(), and
// 'alloc-start' / 'alloc-stop' by sampling allocations over a window (main.ts
// --alloc-prof-dir): V8's sampling heap profiler, keeping the objects GC has freed.
import { Session } from 'node:inspector/promises';
import Fastify from 'fastify';
import { buildServer } from '../../src/api/server.js';
import type { LockService } from '../../src/api/service.js';
import { ok } from '../../src/api/service-result.js';
import { Metrics } from '../../src/metrics.js';

const GRANT = { name: 'bench/lock', session_id: 's-bench', fencing_token: 7, ttl_ms: 10_000 };
const KEEPALIVE = { session_id: 's-bench', ttl_ms: 10_000 };
const RELEASED = { name: 'bench/lock', released: true as const };

function unused(): never {
  throw new Error('not used by the HTTP benchmark');
}

/** answers the benchmark's three calls at once; everything else is outside the benchmark */
const instant: LockService = {
  routing: () => ({ isLeader: true, leaderApi: null }),
  ready: () => true,
  openSession: async () => ok(KEEPALIVE),
  keepalive: async () => ok(KEEPALIVE),
  acquire: async () => ok(GRANT),
  release: async () => ok(RELEASED),
  renew: async () => ok(GRANT),
  getSession: unused,
  closeSession: unused,
  getLock: unused,
  listLocks: unused,
  checkToken: unused,
  cluster: unused,
  addMember: unused,
  removeMember: unused,
  transferLeadership: unused,
};

async function main(): Promise<void> {
  const mode = process.argv[2];
  let listen: () => Promise<string>;
  if (mode === 'ours') {
    const app = buildServer({ service: instant, nodeId: 'n1', metrics: new Metrics(), limits: { minTtlMs: 1000, maxTtlMs: 3_600_000 }, logger: false });
    listen = () => app.listen({ host: '127.0.0.1', port: 0 });
  } else if (mode === 'bare') {
    const app = Fastify({ logger: false });
    app.post('/v1/sessions/:id/keepalive', async () => KEEPALIVE);
    app.post('/v1/locks/*', async (req) => ((req.raw.url ?? '').endsWith('/release') ? RELEASED : GRANT));
    listen = () => app.listen({ host: '127.0.0.1', port: 0 });
  } else {
    throw new Error(`usage: server.ts ours|bare (got ${String(mode)})`);
  }
  const url = await listen();
  const inspector = new Session();
  process.on('message', (m) => {
    if (m === 'cpu') process.send?.({ cpu: process.cpuUsage() });
    else if (m === 'alloc-start' || m === 'alloc-start-survivors') void startAllocSampling(inspector, m === 'alloc-start-survivors').then(() => process.send?.({ ok: true }));
    else if (m === 'alloc-stop') void inspector.post('HeapProfiler.stopSampling').then((r) => process.send?.({ profile: r.profile }));
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ url });
}

/** every allocation of about 1 KiB sampled, including those already collected, or with
 *  `survivorsOnly` only those no scavenge collected: the includeObjectsCollectedBy* fields
 *  are V8's (Node 20's types do not list them) */
async function startAllocSampling(s: Session, survivorsOnly: boolean): Promise<void> {
  s.connect();
  await s.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !survivorsOnly } as { samplingInterval: number });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
