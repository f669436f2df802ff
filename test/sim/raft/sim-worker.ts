// Worker-thread entry for the simulation sweep and the soak (pool.ts): runs a contiguous
// range of seeds and posts one message when a seed starts (so the pool's watchdog can name
// a seed that hangs) and one with its outcome.
import { parentPort, workerData } from 'node:worker_threads';
import { runSchedule } from './simulate.js';
import { formatFailure } from './report.js';
import type { Mutation } from './mutations.js';

export interface WorkerJob {
  from: number;
  count: number;
  ticks: number;
  /** safety fixes switched off (mutations.ts) */
  mutations?: readonly Mutation[];
}

export interface SeedOutcome {
  seed: number;
  ticks: number;
  committed: number;
  /** disk stalls and the heartbeat cover's heartbeats (disk-stalls.ts) */
  diskStalls: number;
  coverHeartbeats: number;
  /** the failure report, when the seed failed */
  report?: string;
}

export type WorkerMessage = { started: number } | { outcome: SeedOutcome } | { done: true };

const job = workerData as WorkerJob;
const post = (m: WorkerMessage): void => parentPort!.postMessage(m);
for (let seed = job.from; seed < job.from + job.count; seed++) {
  post({ started: seed });
  const mutations = job.mutations ?? [];
  const r = runSchedule(seed, { ticks: job.ticks, mutations });
  const outcome: SeedOutcome = { seed, ticks: r.ticks, committed: r.stats['committed'] ?? 0, diskStalls: r.stats['diskStalls'] ?? 0, coverHeartbeats: r.stats['coverHeartbeats'] ?? 0 };
  // replay a failing seed with a trace for the report: same seed, same schedule
  if (!r.ok) outcome.report = formatFailure(runSchedule(seed, { ticks: job.ticks, traceLines: 60, mutations }));
  post({ outcome });
}
post({ done: true });
