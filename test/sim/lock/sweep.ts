// `npm run sim:lock -- --seed N --seeds K --jobs J`: K seeds over J child processes, each a
// contiguous range (the same command without --jobs, so every seed runs exactly as
// `npm run sim:lock -- --seed S` does). Prints each failing seed's report as it comes,
// progress every 100 seeds, and a summary: seeds, failed seeds, the largest log seen, wall
// time, and the totals of the seeds' counters (every `key=integer` of their SEED lines). For the long sweeps of docs/simulation-lock.md; run it with nice on a shared machine.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface SweepResult {
  seeds: number;
  failed: number[];
  wallS: number;
}

export async function sweep(argv0: string, script: string, base: number, seeds: number, jobs: number, passThrough: string[]): Promise<SweepResult> {
  const started = performance.now();
  const failed: number[] = [];
  let done = 0;
  let maxLog = 0;
  const totals = new Map<string, number>();
  const per = Math.ceil(seeds / jobs);
  const runs: Promise<void>[] = [];
  for (let j = 0; j < jobs; j++) {
    const from = base + j * per;
    const count = Math.min(per, base + seeds - from);
    if (count <= 0) break;
    runs.push(new Promise((resolve, reject) => {
      const child = spawn(argv0, [...process.execArgv, script, '--seed', String(from), '--seeds', String(count), ...passThrough], { stdio: ['ignore', 'pipe', 'inherit'] });
      // a failing seed's report: its SEED line and what follows, up to the next seed
      let report: string[] | null = null;
      const flush = (): void => {
        if (report !== null) console.log(`\n${report.join('\n')}\n`);
        report = null;
      };
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const m = /^SEED=(\d+) (ok|FAILED) ticks=/.exec(line);
        if (m) {
          flush();
          done++;
          const log = /maxLog=(\d+)/.exec(line);
          if (log) maxLog = Math.max(maxLog, Number(log[1]));
          for (const [, k, v] of line.matchAll(/ (\w+)=(\d+)(?= |$)/g)) if (k !== 'maxLog' && k !== 'ticks') totals.set(k!, (totals.get(k!) ?? 0) + Number(v));
          if (m[2] === 'FAILED') {
            failed.push(Number(m[1]));
            report = [line];
          }
          if (done % 100 === 0) console.log(`${done}/${seeds} seeds, ${failed.length} failed, ${((performance.now() - started) / 1000).toFixed(0)} s`);
          return;
        }
        if (report !== null && !/^\d+ seeds from \d+:/.test(line)) report.push(line);
      });
      child.on('error', reject);
      child.on('exit', () => {
        flush();
        resolve();
      });
    }));
  }
  await Promise.all(runs);
  const wallS = (performance.now() - started) / 1000;
  failed.sort((a, b) => a - b);
  console.log(`sweep: ${done} seeds from ${base} on ${jobs} processes, ${failed.length} failed${failed.length > 0 ? ` (seeds ${failed.join(' ')})` : ''}, ` +
    `longest log ${maxLog} entries, ${wallS.toFixed(0)} s`);
  console.log(`totals: ${[...totals].map(([k, v]) => `${k}=${v}`).join(' ')}`);
  return { seeds: done, failed, wallS };
}
