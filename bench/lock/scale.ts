// `npm run bench -- --scale N`: the state-size targets (BENCHMARKS.md "100,000 sessions
// each holding a lock"). N sessions each holding one lock (one acquire without session_id
// per lock: one Raft entry each, through the leader, `clients` in flight), then per node:
// RSS, the data directory, the snapshot the node stores, and the time a restarted node
// takes to be ready again (/readyz 200: it knows a leader and has applied up to the commit
// index it knows).
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LevelStorage } from '../../src/raft/storage/level-storage.js';
import { HttpStatusError, JsonHttp } from './http.js';
import { getJson, pollUntil } from './procs.js';
import type { LocalRaftlock } from './raftlock-target.js';
import { sumMetric } from './target.js';

export interface ScaleNode {
  id: string;
  role: string;
  /** right after the fill (the fill's garbage included) */
  rssMiB: number;
  /** after SETTLE_MS with no load: the steady state of a node holding that much */
  rssSettledMiB: number | null;
  /** V8 heap in use at the scrape (garbage not yet collected included) */
  heapUsedMiB: number;
  /** V8 heap reserved, and memory outside it (Buffers/ArrayBuffers) */
  heapTotalMiB: number;
  externalMiB: number;
  dataDirMiB: number;
  snapshotMiB: number | null;
  snapshotIndex: number | null;
  restartToReadyMs: number | null;
}

export interface ScaleResult {
  locks: number;
  fillSeconds: number;
  fillPerSecond: number;
  errors: number;
  nodes: ScaleNode[];
}

const MiB = 2 ** 20;
/** how long the cluster idles before the second RSS reading: V8's memory reducer starts
 *  after ~8 s of low allocation and collects the fill's garbage over the next seconds
 *  (10 s was too short to see it: 301 → 301 MiB on the leader; 30 s: 293 → 175) */
const SETTLE_MS = 30_000;

async function fill(api: string, n: number, clients: number, onProgress: (done: number) => void): Promise<{ seconds: number; errors: number }> {
  const http = new JsonHttp(api, clients);
  let next = 0;
  let done = 0;
  let errors = 0;
  const t0 = performance.now();
  const timer = setInterval(() => onProgress(done), 500);
  try {
    await Promise.all(Array.from({ length: clients }, async () => {
      while (next < n) {
        const k = next++;
        for (let attempt = 0; ; attempt++) {
          try {
            // no Idempotency-Key: remembered keys would add ~160 B each to every node's
            // memory and snapshot, which is not what this measures. A retry after a
            // timeout that finds the lock held by its own owner tag counts as done.
            await http.call('POST', `/v1/locks/scale/${k}/acquire`, { ttl_ms: 3_600_000, owner: `s${k}` });
            break;
          } catch (err) {
            if (err instanceof HttpStatusError && err.code === 'lock_held' && err.text.includes(`"owner":"s${k}"`)) break;
            errors++;
            // 503/504 during an election: retry (the key keeps it exactly-once) for ~10 s
            if (attempt >= 50) throw err;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
        done++;
      }
    }));
  } finally {
    clearInterval(timer);
    await http.close();
  }
  return { seconds: (performance.now() - t0) / 1000, errors };
}

interface ClusterView {
  role: string;
  commit_index: number;
  applied_index: number;
}

export async function runScale(d: LocalRaftlock, n: number, clients: number, log: (line: string) => void): Promise<ScaleResult> {
  const leaderApi = await d.leader();
  log(`scale: acquiring ${n} locks, each in its own new session, ${clients} requests in flight…`);
  const f = await fill(leaderApi, n, clients, (done) => log(`scale: ${done}/${n}`));
  log(`scale: filled in ${f.seconds.toFixed(1)} s (${Math.round(n / f.seconds)} locks/s, ${f.errors} retried errors)`);
  // every node has applied everything the leader committed
  const target = (await getJson<ClusterView>(`${leaderApi}/v1/cluster`))!.body.commit_index;
  await pollUntil('every node caught up', 120_000, async () => {
    for (const id of d.nodeIds) if (((await getJson<ClusterView>(`${d.api(id)}/v1/cluster`))?.body.applied_index ?? 0) < target) return undefined;
    return true;
  });
  const nodes: ScaleNode[] = [];
  for (const id of d.nodeIds) {
    const view = (await getJson<ClusterView>(`${d.api(id)}/v1/cluster`))!.body;
    const metrics = await (await fetch(`${d.api(id)}/metrics`)).text();
    nodes.push({ id, role: view.role, rssMiB: sumMetric(metrics, 'process_resident_memory_bytes') / MiB, rssSettledMiB: null, heapUsedMiB: sumMetric(metrics, 'nodejs_heap_size_used_bytes') / MiB, heapTotalMiB: sumMetric(metrics, 'nodejs_heap_size_total_bytes') / MiB, externalMiB: sumMetric(metrics, 'nodejs_external_memory_bytes') / MiB, dataDirMiB: d.dataDirBytes(id) / MiB, snapshotMiB: null, snapshotIndex: null, restartToReadyMs: null });
  }
  log(`scale: idling ${SETTLE_MS / 1000} s for the settled RSS…`);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  for (const x of nodes) x.rssSettledMiB = sumMetric(await (await fetch(`${d.api(x.id)}/metrics`)).text(), 'process_resident_memory_bytes') / MiB;
  // restart one follower: read its stored snapshot while it is down, then time it to ready
  const follower = nodes.find((x) => x.role !== 'leader')!;
  follower.restartToReadyMs = await d.restart(follower.id, async (dataDir) => {
    const s = await LevelStorage.open(join(dataDir), { seedConf: { voters: d.nodeIds, learners: [] } });
    try {
      const snap = s.snapshot();
      follower.snapshotMiB = snap.data.length / MiB;
      follower.snapshotIndex = snap.meta.index;
    } finally {
      await s.close();
    }
  });
  return { locks: n, fillSeconds: f.seconds, fillPerSecond: n / f.seconds, errors: f.errors, nodes };
}

export function scaleTable(r: ScaleResult): string {
  const lines = [
    `${r.locks.toLocaleString('en-US')} sessions each holding a lock (filled at ${Math.round(r.fillPerSecond)} locks/s):`,
    `| node | role | RSS MiB after fill | RSS MiB after ${SETTLE_MS / 1000} s idle (≤ 300) | V8 heap used / total MiB | external MiB | data dir MiB | snapshot MiB (≤ 30) | snapshot index | restart → ready ms (≤ 5000) |`,
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const x of r.nodes) {
    lines.push(`| ${x.id} | ${x.role} | ${x.rssMiB.toFixed(0)} | ${x.rssSettledMiB?.toFixed(0) ?? '-'} | ${x.heapUsedMiB.toFixed(0)} / ${x.heapTotalMiB.toFixed(0)} | ${x.externalMiB.toFixed(0)} | ${x.dataDirMiB.toFixed(1)} | ${x.snapshotMiB?.toFixed(1) ?? '-'} | ${x.snapshotIndex ?? '-'} | ${x.restartToReadyMs?.toFixed(0) ?? '-'} |`);
  }
  return lines.join('\n');
}
