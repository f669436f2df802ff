// The lock simulation's command line:
//   npm run sim:lock -- --seed N [--ticks T] [--seeds K] [--verbose] [--mutation NAME] [--jobs J]
// runs seed N (or K seeds from N; default: one random seed). --mutation switches a fix off
// (docs/simulation-lock.md "Mutation table"). Every seed prints SEED=N; a failing one
// prints the failure, the trace tail and `reproduce: npm run sim:lock -- --seed N`.
// --jobs J spreads the K seeds over J processes (sweep.ts) and prints only failures,
// progress and a summary.
import { runLockSchedule, drawLockOptions } from './simulate.js';
import { formatLockFailure } from './report.js';
import { parseSeedArgs } from '../support/seed-args.js';
import type { LockMutations } from './node.js';
import { sweep } from './sweep.js';
import { intArg } from '../support/seed-args.js';
import { fileURLToPath } from 'node:url';

const MUTATIONS: readonly (keyof LockMutations)[] = ['legacyEndLockDelay', 'legacyCancelWait', 'wallClockStamps', 'testExpireHoldIgnoresToken', 'testRearmFullMaxHold', 'testLegacyWaitTracking', 'testNoDeadlockDetection', 'testWithdrawSetsBeforeDelay', 'testEndWaitsOneByOne'];

function usage(msg: string): never {
  console.error(`${msg}\nusage: npm run sim:lock -- [--seed N] [--seeds K] [--ticks T] [--verbose] [--mutation ${MUTATIONS.join('|')}] [--jobs J]`);
  process.exit(2);
}

async function main(): Promise<void> {
  const { seed, seeds, ticks, verbose, extra } = parseSeedArgs(process.argv.slice(2), { ticks: 1500 }, usage, { mutation: { type: 'string' }, jobs: { type: 'string' } });
  const m = extra['mutation'];
  if (m !== undefined && !MUTATIONS.includes(m as keyof LockMutations)) usage(`--mutation must be one of ${MUTATIONS.join(', ')}, got ${String(m)}`);
  const mutations: LockMutations = m === undefined ? {} : { [m as keyof LockMutations]: true };
  const base = seed ?? Math.floor(Math.random() * 1e9);
  const jobs = extra['jobs'] === undefined ? 1 : intArg('jobs', extra['jobs'], 1, usage);
  if (jobs > 1) {
    if (verbose) usage('--verbose prints every seed: use it without --jobs');
    const r = await sweep(process.execPath, fileURLToPath(import.meta.url), base, seeds, jobs, ['--ticks', String(ticks), ...(typeof m === 'string' ? ['--mutation', m] : [])]);
    process.exitCode = r.failed.length > 0 ? 1 : 0;
    return;
  }
  let failed = 0;
  for (let s = base; s < base + seeds; s++) {
    if (verbose) console.log(JSON.stringify(drawLockOptions(s, ticks), null, 1));
    const t0 = performance.now();
    const r = await runLockSchedule(s, { ticks, mutations, ...(verbose ? { onTrace: (l: string) => console.log(l) } : {}) });
    const st = r.stats;
    console.log(`SEED=${s} ${r.ok ? 'ok' : 'FAILED'} ticks=${r.ticks} committed=${st['committed']} grants=${st['grants']} ackedGrants=${st['ackedGrants']} ` +
      `expiries=${st['expiries']} lessorExpire=${st['lessorExpire']} keepalives=${st['ackedKeepalives']} crashes=${st['crashes']} restarts=${st['restarts']} snapshots=${st['snapshotsRestored']} ` +
      `lessorDelayed=${st['lessorDelayed']} lessorDuplicated=${st['lessorDuplicated']} delaysEnded=${st['delaysEnded']} waitsCancelled=${st['waitsCancelled']} clockSteps=${st['clockSteps']} ` +
      `sharedGrants=${st['sharedGrants']} ackedShares=${st['ackedShares']} semGrants=${st['semGrants']} semAcked=${st['semAcked']} semResized=${st['semResized']} fifoChecked=${st['fifoChecked']} ` +
      `electionsWon=${st['electionsWon']} proclaims=${st['proclaims']} resigns=${st['resigns']} electionChecks=${st['electionChecks']} ` +
      `waitsQueued=${st['waitsQueued']} waitBoundChecks=${st['waitBoundChecks']} waitLateMsMax=${st['waitLateMsMax']} lessorCancelWait=${st['lessorCancelWait']} setsQueued=${st['setsQueued']} setsGranted=${st['setsGranted']} deadlocks=${st['deadlocks']} deadlockChecks=${st['deadlockChecks']} maxLog=${st['maxLogIndex']} diskStalls=${st['diskStalls']} coverHeartbeats=${st['coverHeartbeats']} ` +
      `${((performance.now() - t0) / 1000).toFixed(2)}s`);
    if (!r.ok) {
      failed++;
      console.log(verbose || m === undefined ? formatLockFailure(r, ticks) : `  ${r.failure!.kind}: ${r.failure!.message.split('\n')[0]}`);
    }
  }
  if (seeds > 1) console.log(`${seeds} seeds from ${base}: ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

await main();
