// Runs seed ranges on worker threads (sim-worker.ts), for the test sweep and the soak.
import { Worker } from 'node:worker_threads';
import type { WorkerJob, WorkerMessage } from './sim-worker.js';
import type { Mutation } from './mutations.js';

export type { WorkerJob };

export interface WorkerSummary {
  schedules: number;
  ticks: number;
  committed: number;
  diskStalls: number;
  coverHeartbeats: number;
  failures: { seed: number; report: string }[];
}

/** a schedule that runs longer than this is reported as a hang (an endless loop in the core) */
export const HANG_MS = 60_000;

function spawn(job: WorkerJob): Worker {
  // compiled: sim-worker.js next to this file. Under tsx (fast iteration), Node 20 does not
  // carry tsx's loader into worker threads, so a small eval'd bootstrap registers it first.
  const ts = import.meta.url.endsWith('.ts');
  const url = new URL(`./sim-worker.${ts ? 'ts' : 'js'}`, import.meta.url);
  return ts
    ? new Worker(`import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(url.href)}); })`, { eval: true, workerData: job })
    : new Worker(url, { workerData: job });
}

/** run one seed range on a worker; a seed that hangs is killed with its worker, reported as
 *  a failure, and the rest of the range continues on a fresh worker */
export async function runWorker(job: WorkerJob, hangMs = HANG_MS): Promise<WorkerSummary> {
  const total = emptySummary();
  const end = job.from + job.count;
  let next = job.from;
  while (next < end) {
    const hung = await new Promise<number | null>((resolve, reject) => {
      const w = spawn({ ...job, from: next, count: end - next });
      let current = next;
      let finished = false;
      const arm = (): NodeJS.Timeout => setTimeout(() => {
        finished = true;
        void w.terminate();
        resolve(current);
      }, hangMs);
      let timer = arm();
      w.on('message', (m: WorkerMessage) => {
        clearTimeout(timer);
        if ('started' in m) {
          current = m.started;
          timer = arm();
        } else if ('outcome' in m) {
          const o = m.outcome;
          total.schedules++;
          total.ticks += o.ticks;
          total.committed += o.committed;
          total.diskStalls += o.diskStalls;
          total.coverHeartbeats += o.coverHeartbeats;
          if (o.report !== undefined) total.failures.push({ seed: o.seed, report: o.report });
          next = o.seed + 1;
        } else {
          finished = true;
          resolve(null);
        }
      });
      w.once('error', (err) => {
        clearTimeout(timer);
        if (!finished) reject(err);
      });
      w.once('exit', (code) => {
        clearTimeout(timer);
        if (!finished && code !== 0) reject(new Error(`sim worker exited with code ${code} during seed ${current}`));
      });
    });
    if (hung === null) break;
    total.schedules++;
    total.failures.push({ seed: hung, report: `FAILED Hang: seed ${hung} ran over ${hangMs / 1000} s (an endless loop?)\nSEED=${hung}\nreproduce: npm run sim -- --seed ${hung}` });
    next = hung + 1;
  }
  return total;
}

export function emptySummary(): WorkerSummary {
  return { schedules: 0, ticks: 0, committed: 0, diskStalls: 0, coverHeartbeats: 0, failures: [] };
}

export function addSummary(a: WorkerSummary, b: WorkerSummary): WorkerSummary {
  return {
    schedules: a.schedules + b.schedules, ticks: a.ticks + b.ticks, committed: a.committed + b.committed,
    diskStalls: a.diskStalls + b.diskStalls, coverHeartbeats: a.coverHeartbeats + b.coverHeartbeats, failures: [...a.failures, ...b.failures],
  };
}

/** run `count` seeds from `from` on `jobs` workers in chunks; `onChunk` sees each result */
export async function runPool(from: number, count: number, ticks: number, jobs: number, chunk: number,
  onChunk?: (s: WorkerSummary, done: number) => void, mutations: readonly Mutation[] = []): Promise<WorkerSummary> {
  let next = 0, total = emptySummary();
  const lane = async (): Promise<void> => {
    while (next < count) {
      const start = next;
      next = Math.min(count, next + chunk);
      const s = await runWorker({ from: from + start, count: next - start, ticks, mutations });
      total = addSummary(total, s);
      onChunk?.(s, total.schedules);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, lane));
  return total;
}
