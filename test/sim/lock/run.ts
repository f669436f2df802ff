// The lock simulation's command line:
//   npm run sim:lock -- --seed N [--ticks T] [--seeds K] [--verbose] [--mutation NAME] [--jobs J]
// runs seed N (or K seeds from N; default: one random seed). --mutation switches a fix off
// (docs/simulation-lock.md "Mutation table"). Every seed prints SEED=N; a failing one
// prints the failure, the trace tail and `reproduce: npm run sim:lock -- --seed N`.
// --jobs J spreads the K seeds over J worker threads (test/sim/sweep.ts, each seed run as
// seed.ts runs it) and prints only failures, progress every 100 seeds, a summary (seeds,
// failed seeds, the longest log, wall time) and the totals of the SEED lines' counters.
import { DEFAULT_LOCK_TICKS, runLockSchedule, drawLockOptions } from './simulate.js';
import { intArg, parseSeedArgs } from '../../support/seed-args.js';
import type { LockMutations } from './node.js';
import { formatSeedFailure, formatSeedLine, lockSweep } from './seed.js';
import { formatFailed, formatTotals, sweep } from '../sweep.js';

const MUTATIONS: readonly (keyof LockMutations)[] = ['legacyEndLockDelay', 'legacyCancelWait', 'wallClockStamps', 'testExpireHoldIgnoresToken', 'testRearmFullMaxHold', 'testLegacyWaitTracking', 'testNoDeadlockDetection', 'testWithdrawSetsBeforeDelay', 'testEndWaitsOneByOne', 'testKeepQueuedAnswers', 'testJoinAnyWait'];

function usage(msg: string): never {
  console.error(`${msg}\nusage: npm run sim:lock -- [--seed N] [--seeds K] [--ticks T] [--verbose] [--mutation ${MUTATIONS.join('|')}] [--jobs J]`);
  process.exit(2);
}

async function main(): Promise<void> {
  const { seed, seeds, ticks, verbose, extra } = parseSeedArgs(process.argv.slice(2), { ticks: DEFAULT_LOCK_TICKS }, usage, { mutation: { type: 'string' }, jobs: { type: 'string' } });
  const m = extra['mutation'];
  if (m !== undefined && !MUTATIONS.includes(m as keyof LockMutations)) usage(`--mutation must be one of ${MUTATIONS.join(', ')}, got ${String(m)}`);
  const mutations: LockMutations = m === undefined ? {} : { [m as keyof LockMutations]: true };
  const base = seed ?? Math.floor(Math.random() * 1e9);
  const jobs = extra['jobs'] === undefined ? 1 : intArg('jobs', extra['jobs'], 1, usage);
  if (jobs > 1) {
    if (verbose) usage('--verbose prints every seed: use it without --jobs');
    const r = await sweep(lockSweep({ ticks, ...(m === undefined ? {} : { mutation: m as keyof LockMutations }) }), { from: base, count: seeds, jobs, log: (l) => console.log(l), progressEvery: 100 });
    console.log(`sweep: ${r.seeds} seeds from ${base} on ${jobs} workers, ${formatFailed(r)}, longest log ${r.maxima.get('maxLog') ?? 0} entries, ${r.wallS.toFixed(0)} s`);
    console.log(formatTotals(r));
    process.exitCode = r.failures.length > 0 ? 1 : 0;
    return;
  }
  let failed = 0;
  for (let s = base; s < base + seeds; s++) {
    if (verbose) console.log(JSON.stringify(drawLockOptions(s, ticks), null, 1));
    const t0 = performance.now();
    const r = await runLockSchedule(s, { ticks, mutations, ...(verbose ? { onTrace: (l: string) => console.log(l) } : {}) });
    console.log(formatSeedLine(r, (performance.now() - t0) / 1000));
    if (!r.ok) {
      failed++;
      console.log(formatSeedFailure(r, ticks, !verbose && m !== undefined));
    }
  }
  if (seeds > 1) console.log(`${seeds} seeds from ${base}: ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

await main();
