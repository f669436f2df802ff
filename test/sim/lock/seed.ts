// The lock mode's seed: its `SEED=N ok|FAILED key=value …` line (what `npm run sim:lock`
// prints per seed) and the sweep runner's `runSeed` (test/sim/sweep.ts), whose counters are
// that line's integers, so a sweep's `totals:` sum exactly what the per-seed lines show.
import { DEFAULT_LOCK_TICKS, runLockSchedule, type LockScheduleResult } from './simulate.js';
import { formatLockFailure } from './report.js';
import type { LockMutations } from './node.js';
import type { SeedOutcome, SweepMode } from '../sweep.js';

/** the SEED line's fields: its name → the stat it shows */
const LINE: readonly (readonly [string, string])[] = [
  ['committed', 'committed'], ['grants', 'grants'], ['ackedGrants', 'ackedGrants'], ['expiries', 'expiries'], ['lessorExpire', 'lessorExpire'],
  ['keepalives', 'ackedKeepalives'], ['crashes', 'crashes'], ['restarts', 'restarts'], ['snapshots', 'snapshotsRestored'],
  ['lessorDelayed', 'lessorDelayed'], ['lessorDuplicated', 'lessorDuplicated'], ['delaysEnded', 'delaysEnded'], ['waitsCancelled', 'waitsCancelled'], ['clockSteps', 'clockSteps'],
  ['sharedGrants', 'sharedGrants'], ['ackedShares', 'ackedShares'], ['semGrants', 'semGrants'], ['semAcked', 'semAcked'], ['semResized', 'semResized'], ['fifoChecked', 'fifoChecked'],
  ['electionsWon', 'electionsWon'], ['proclaims', 'proclaims'], ['resigns', 'resigns'], ['electionChecks', 'electionChecks'],
  ['waitsQueued', 'waitsQueued'], ['waitBoundChecks', 'waitBoundChecks'], ['waitLateMsMax', 'waitLateMsMax'], ['lessorCancelWait', 'lessorCancelWait'],
  ['setsQueued', 'setsQueued'], ['setsGranted', 'setsGranted'], ['deadlocks', 'deadlocks'], ['deadlockChecks', 'deadlockChecks'],
  ['maxLog', 'maxLogIndex'], ['diskStalls', 'diskStalls'], ['coverHeartbeats', 'coverHeartbeats'],
];

/** `SEED=N ok|FAILED ticks=T committed=… coverHeartbeats=… 1.23s` */
export function formatSeedLine(r: LockScheduleResult, wallS: number): string {
  return `SEED=${r.seed} ${r.ok ? 'ok' : 'FAILED'} ticks=${r.ticks} ${LINE.map(([name, stat]) => `${name}=${r.stats[stat]}`).join(' ')} ${wallS.toFixed(2)}s`;
}

/** a failing seed's report: the whole of it, or (a mutation sweep, where failing is the
 *  point) the checker and the first line of its message */
export function formatSeedFailure(r: LockScheduleResult, ticks: number, oneLine: boolean): string {
  return oneLine ? `  ${r.failure!.kind}: ${r.failure!.message.split('\n')[0]}` : formatLockFailure(r, ticks);
}

export interface LockSeedArgs {
  ticks: number;
  /** the fix switched off (`--mutation`); its failures print one line, not the whole report */
  mutation?: keyof LockMutations;
}

/** lock seeds are heavier than the Raft mode's (2–10 s of wall each at 6,000 ticks on a
 *  loaded machine): a hang is a seed that runs this long */
export const HANG_MS = 300_000;

export async function runSeed(seed: number, a: LockSeedArgs): Promise<SeedOutcome> {
  const t0 = performance.now();
  const r = await runLockSchedule(seed, { ticks: a.ticks, mutations: a.mutation === undefined ? {} : { [a.mutation]: true } });
  const counters: Record<string, number> = {};
  for (const [name, stat] of LINE) {
    const v = r.stats[stat];
    if (name !== 'maxLog' && v !== undefined && Number.isSafeInteger(v) && v >= 0) counters[name] = v;
  }
  const outcome: SeedOutcome = { ok: r.ok, counters, maxima: { maxLog: r.stats['maxLogIndex'] ?? 0 } };
  if (!r.ok) {
    outcome.report = `${formatSeedLine(r, (performance.now() - t0) / 1000)}\n${formatSeedFailure(r, a.ticks, a.mutation !== undefined)}`;
  }
  return outcome;
}

export function lockSweep(args: LockSeedArgs): SweepMode<LockSeedArgs> {
  return {
    module: import.meta.url, args, hangMs: HANG_MS,
    reproduce: (seed) => `npm run sim:lock -- --seed ${seed}${args.ticks !== DEFAULT_LOCK_TICKS ? ` --ticks ${args.ticks}` : ''}${args.mutation !== undefined ? ` --mutation ${args.mutation}` : ''}`,
  };
}
