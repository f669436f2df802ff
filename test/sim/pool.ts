// Runs seed ranges on worker threads (sim-worker.ts), for the test sweep and the soak.
import { Worker } from 'node:worker_threads';
import type { WorkerJob, WorkerSummary } from './sim-worker.js';

export type { WorkerJob, WorkerSummary };

export function runWorker(job: WorkerJob): Promise<WorkerSummary> {
  // compiled: sim-worker.js next to this file. Under tsx (fast iteration), Node 20 does not
  // carry tsx's loader into worker threads, so a small eval'd bootstrap registers it first.
  const ts = import.meta.url.endsWith('.ts');
  const url = new URL(`./sim-worker.${ts ? 'ts' : 'js'}`, import.meta.url);
  return new Promise((resolve, reject) => {
    const w = ts
      ? new Worker(`import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(url.href)}); })`, { eval: true, workerData: job })
      : new Worker(url, { workerData: job });
    w.once('message', (m: WorkerSummary) => resolve(m));
    w.once('error', reject);
    w.once('exit', (code) => {
      if (code !== 0) reject(new Error(`sim worker exited with ${code}`));
    });
  });
}

export function emptySummary(): WorkerSummary {
  return { schedules: 0, ticks: 0, committed: 0, failures: [] };
}

export function addSummary(a: WorkerSummary, b: WorkerSummary): WorkerSummary {
  return { schedules: a.schedules + b.schedules, ticks: a.ticks + b.ticks, committed: a.committed + b.committed, failures: [...a.failures, ...b.failures] };
}

/** run `count` seeds from `from` on `jobs` workers in chunks; `onChunk` sees each result */
export async function runPool(from: number, count: number, ticks: number, jobs: number, chunk: number,
  onChunk?: (s: WorkerSummary, done: number) => void): Promise<WorkerSummary> {
  let next = 0, total = emptySummary();
  const lane = async (): Promise<void> => {
    while (next < count) {
      const start = next;
      next = Math.min(count, next + chunk);
      const s = await runWorker({ from: from + start, count: next - start, ticks });
      total = addSummary(total, s);
      onChunk?.(s, total.schedules);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, lane));
  return total;
}
