// The simulator's one sweep runner, for both modes (docs/simulation.md "Sweeps"): K seeds
// from a base over J worker threads (sweep-worker.ts), each worker handed the next seed as
// it finishes one (schedule lengths vary with their options, so lanes stay balanced). A
// mode supplies only "run one seed → {ok, counters, report}" (raft/seed.ts, lock/seed.ts);
// this file owns the rest: the hang watchdog that names the seed, each failing seed's
// report as it comes, progress, and the totals of the mode's integer counters.
//
// Worker threads, not processes: both modes' seeds are deterministic functions of the seed
// in one thread (the lock mode awaits its drivers through promises on a simulated clock,
// with no I/O), and a worker has its own event loop, heap and module instances, so a seed
// runs in a worker exactly as in `npm run sim:lock -- --seed S`; a worker is started once
// per lane (under tsx a start costs about a second of CPU). A seed that hangs (an endless
// loop, or a promise that never settles) or throws out of its worker is a failing seed;
// its lane goes on with a fresh worker.
import { Worker } from 'node:worker_threads';

/** one seed's result, as a mode's `runSeed` returns it */
export interface SeedOutcome {
  ok: boolean;
  /** summed over the sweep (`totals:`); integers */
  counters: Record<string, number>;
  /** the largest value over the sweep (e.g. the lock mode's longest log) */
  maxima?: Record<string, number>;
  /** what a failing seed prints: its failure, trace tail and `reproduce:` line */
  report?: string;
}

/** a mode: the module whose `runSeed(seed, args)` runs one seed (returning a SeedOutcome or a
 *  promise of one), the options every seed runs with, and its watchdog */
export interface SweepMode<A> {
  /** the seed module's `import.meta.url` (.ts under tsx, .js compiled) */
  module: string;
  /** structured-cloneable: it is posted to each worker */
  args: A;
  /** a seed that runs longer than this is reported as a hang */
  hangMs: number;
  /** the command that replays one seed, for the reports of seeds that hung or threw */
  reproduce: (seed: number) => string;
}

export interface SweepJob {
  module: string;
  args: unknown;
}

/** worker → runner; the runner posts a seed (a number) and the worker answers with its outcome */
export type SweepMessage = { ready: true } | { seed: number; outcome: SeedOutcome };

export interface SweepOptions {
  from: number;
  count: number;
  jobs: number;
  /** where failing seeds' reports (as they come) and progress go; none: silent */
  log?: (line: string) => void;
  /** a progress line every this many seeds (with `log`) */
  progressEvery?: number;
}

export interface SweepResult {
  seeds: number;
  /** by seed */
  failures: { seed: number; report: string }[];
  /** every counter summed, in the order the first seed gave them */
  totals: Map<string, number>;
  maxima: Map<string, number>;
  wallS: number;
}

export async function sweep<A>(mode: SweepMode<A>, o: SweepOptions): Promise<SweepResult> {
  const started = performance.now();
  const jobs = Math.max(1, o.jobs);
  const result: SweepResult = { seeds: 0, failures: [], totals: new Map(), maxima: new Map(), wallS: 0 };
  const record = (seed: number, out: SeedOutcome): void => {
    result.seeds++;
    for (const [k, v] of Object.entries(out.counters)) result.totals.set(k, (result.totals.get(k) ?? 0) + v);
    for (const [k, v] of Object.entries(out.maxima ?? {})) result.maxima.set(k, Math.max(result.maxima.get(k) ?? v, v));
    if (!out.ok) {
      const report = out.report ?? `SEED=${seed} FAILED\nreproduce: ${mode.reproduce(seed)}`;
      result.failures.push({ seed, report });
      o.log?.(`\n${report}\n`);
    }
    if (o.progressEvery !== undefined && result.seeds % o.progressEvery === 0) {
      o.log?.(`${result.seeds}/${o.count} seeds, ${result.failures.length} failed, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
  };
  let next = 0;
  const take = (): number | null => (next < o.count ? o.from + next++ : null);
  await Promise.all(Array.from({ length: jobs }, () => runLane(mode, take, record)));
  result.failures.sort((a, b) => a.seed - b.seed);
  result.wallS = (performance.now() - started) / 1000;
  return result;
}

/** `totals: k=v k=v …` */
export function formatTotals(r: SweepResult): string {
  return `totals: ${[...r.totals].map(([k, v]) => `${k}=${v}`).join(' ')}`;
}

/** `F failed` and, if any, ` (seeds a b c)` */
export function formatFailed(r: SweepResult): string {
  return `${r.failures.length} failed${r.failures.length > 0 ? ` (seeds ${r.failures.map((f) => f.seed).join(' ')})` : ''}`;
}

type Answer = { outcome: SeedOutcome } | { lost: 'Hang' | 'Exception'; why: string };

/** one worker thread that runs the seeds it is handed, one at a time */
class SeedWorker {
  private readonly worker: Worker;
  private readonly ready: Promise<void>;
  private pending: ((a: Answer) => void) | null = null;
  /** terminated, or ended by itself: the lane starts another */
  dead = false;

  constructor(job: SweepJob) {
    // compiled: sweep-worker.js next to this file. Under tsx (fast iteration), Node 20 does not
    // carry tsx's loader into worker threads, so a small eval'd bootstrap registers it first.
    const ts = import.meta.url.endsWith('.ts');
    const url = new URL(`./sweep-worker.${ts ? 'ts' : 'js'}`, import.meta.url);
    this.worker = ts
      ? new Worker(`import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(url.href)}); })`, { eval: true, workerData: job })
      : new Worker(url, { workerData: job });
    this.ready = new Promise((resolve, reject) => {
      // a worker that fails before it loaded the mode is a broken harness, not a failing seed
      const early = (err: Error): void => reject(err);
      const exited = (code: number): void => reject(new Error(`sweep worker exited with code ${code} before it loaded ${job.module}`));
      this.worker.once('error', early).once('exit', exited);
      this.worker.on('message', (m: SweepMessage) => {
        if ('ready' in m) {
          this.worker.off('error', early).off('exit', exited);
          this.worker.on('error', (err) => this.lose('Exception', `threw out of its worker: ${err.stack ?? String(err)}`));
          this.worker.on('exit', (code) => this.lose('Exception', `ended its worker (exit code ${code})`));
          resolve();
        } else {
          this.answer({ outcome: m.outcome });
        }
      });
    });
  }

  /** run one seed; `lost` when it ran over `hangMs` or took its worker down */
  async run(seed: number, hangMs: number): Promise<Answer> {
    await this.ready;
    const answer = new Promise<Answer>((resolve) => { this.pending = resolve; });
    const timer = setTimeout(() => this.lose('Hang', `ran over ${hangMs / 1000} s (an endless loop, or a promise that never settles?)`), hangMs);
    this.worker.postMessage(seed);
    const a = await answer;
    clearTimeout(timer);
    return a;
  }

  async stop(): Promise<void> {
    this.dead = true;
    await this.worker.terminate();
  }

  private answer(a: Answer): void {
    const p = this.pending;
    this.pending = null;
    p?.(a);
  }

  private lose(lost: 'Hang' | 'Exception', why: string): void {
    if (this.dead) return;
    this.dead = true;
    void this.worker.terminate();
    this.answer({ lost, why });
  }
}

/** one lane: a worker runs the seeds `take` hands it; after a seed that hung or took its
 *  worker down, the lane goes on with a fresh worker */
async function runLane<A>(mode: SweepMode<A>, take: () => number | null, record: (seed: number, out: SeedOutcome) => void): Promise<void> {
  let w: SeedWorker | null = null;
  try {
    for (let seed = take(); seed !== null; seed = take()) {
      if (w === null || w.dead) w = new SeedWorker({ module: mode.module, args: mode.args });
      const a = await w.run(seed, mode.hangMs);
      if ('outcome' in a) {
        record(seed, a.outcome);
        continue;
      }
      record(seed, { ok: false, counters: {}, report: `FAILED ${a.lost}: seed ${seed} ${a.why}\nSEED=${seed}\nreproduce: ${mode.reproduce(seed)}` });
      w = null;
    }
  } finally {
    await w?.stop();
  }
}
