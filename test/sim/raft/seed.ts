// The Raft mode's seed for the sweep runner (test/sim/sweep.ts): one schedule and its
// counters (ticks and every stat); a failing seed is replayed with a trace for its report
// (same seed, same schedule).
import { runSchedule } from './simulate.js';
import { formatFailure, reproduceCommand } from './report.js';
import type { Mutation } from './mutations.js';
import type { SeedOutcome, SweepMode } from '../sweep.js';

export interface RaftSeedArgs {
  ticks: number;
  /** safety fixes switched off (mutations.ts) */
  mutations: readonly Mutation[];
}

/** a schedule that runs longer than this is reported as a hang (an endless loop in the core) */
export const HANG_MS = 60_000;

export function runSeed(seed: number, a: RaftSeedArgs): SeedOutcome {
  const r = runSchedule(seed, { ticks: a.ticks, mutations: a.mutations });
  // every stat is a count, but for the largest values seen (`…Max`)
  const counters: Record<string, number> = { ticks: r.ticks };
  const maxima: Record<string, number> = {};
  for (const [k, v] of Object.entries(r.stats)) if (Number.isInteger(v)) (k.endsWith('Max') ? maxima : counters)[k] = v;
  if (r.ok) return { ok: true, counters, maxima };
  return { ok: false, counters, maxima, report: formatFailure(runSchedule(seed, { ticks: a.ticks, traceLines: 60, mutations: a.mutations })) };
}

export function raftSweep(args: RaftSeedArgs): SweepMode<RaftSeedArgs> {
  return {
    module: import.meta.url, args, hangMs: HANG_MS,
    reproduce: (seed) => reproduceCommand(seed, args.ticks, args.mutations),
  };
}
