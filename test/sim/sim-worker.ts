// Worker-thread entry for sim.test.ts: runs a contiguous range of seeds and posts a summary.
// The test runner executes test files one at a time on a 2-core machine, so the simulation
// spreads its seeds over worker threads to use every core.
import { parentPort, workerData } from 'node:worker_threads';
import { runSchedule } from './simulate.js';
import { formatFailure } from './report.js';

export interface WorkerJob {
  from: number;
  count: number;
  ticks: number;
}

export interface WorkerSummary {
  schedules: number;
  ticks: number;
  committed: number;
  failures: { seed: number; report: string }[];
}

const job = workerData as WorkerJob;
const out: WorkerSummary = { schedules: 0, ticks: 0, committed: 0, failures: [] };
for (let seed = job.from; seed < job.from + job.count; seed++) {
  const r = runSchedule(seed, { ticks: job.ticks });
  out.schedules++;
  out.ticks += r.ticks;
  out.committed += r.stats['committed'] ?? 0;
  if (!r.ok) {
    // replay the failing seed with a trace for the report: same seed, same schedule
    out.failures.push({ seed, report: formatFailure(runSchedule(seed, { ticks: job.ticks, traceLines: 60 })) });
  }
}
parentPort!.postMessage(out);
