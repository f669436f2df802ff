// The simulation sweep for `npm test`: SIM_SCHEDULES (default 2,000) seeded schedules of
// SIM_TICKS (default 2,000) fault ticks each, plus the liveness (and, for Howard's
// partition, stability) phases, spread over worker threads. The base seed is fixed so CI
// is reproducible; SIM_SEED=N moves the window, SIM_SEED=random draws a fresh one.
// Any failing seed is printed with its options, trace tail and `npm run sim -- --seed N`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { WorkerJob, WorkerSummary } from './sim-worker.js';

function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${v}`);
  return n;
}

const schedules = envInt('SIM_SCHEDULES', 2000);
const ticks = envInt('SIM_TICKS', 2000);
const base = process.env['SIM_SEED'] === 'random' ? Math.floor(Math.random() * 1e9) : envInt('SIM_SEED', 1);

function runWorker(job: WorkerJob): Promise<WorkerSummary> {
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
    w.once('exit', (code) => { if (code !== 0) reject(new Error(`sim worker exited with ${code}`)); });
  });
}

test(`simulation: ${schedules} seeded schedules of ${ticks} fault ticks from SEED=${base}`, { timeout: 20 * 60_000 }, async () => {
  const workers = Math.max(1, Math.min(availableParallelism(), 8));
  const started = performance.now();
  const per = Math.ceil(schedules / workers);
  const jobs: WorkerJob[] = [];
  for (let k = 0; k < workers && k * per < schedules; k++) {
    jobs.push({ from: base + k * per, count: Math.min(per, schedules - k * per), ticks });
  }
  const results = await Promise.all(jobs.map(runWorker));
  const secs = (performance.now() - started) / 1000;
  const total = results.reduce((a, r) => ({
    schedules: a.schedules + r.schedules, ticks: a.ticks + r.ticks, committed: a.committed + r.committed,
    failures: [...a.failures, ...r.failures],
  }));
  console.log(`sim: ${total.schedules} schedules, ${total.ticks} ticks (${(total.ticks / total.schedules).toFixed(0)} per schedule), ` +
    `${total.committed} entries committed, ${total.failures.length} failed, ${secs.toFixed(1)} s wall on ${jobs.length} worker(s), ` +
    `seeds ${base}..${base + schedules - 1}`);
  for (const f of total.failures) console.log(`\n${f.report}\n`);
  assert.equal(total.schedules, schedules);
  assert.deepEqual(total.failures.map((f) => f.seed), [], 'failing seeds (reports above)');
});
