// The simulator's command line (TigerBeetle's `vopr` in spirit):
//   npm run sim -- --seed N [--ticks T] [--seeds K] [--verbose] [--mutation NAME[,NAME]] [--no-stalls]
//   npm run sim:soak -- [--seeds 100000] [--seed N] [--jobs J]
// runs seed N (or K seeds from N). A failing seed prints SEED=N, every option, the trace
// tail, the failure and `reproduce: npm run sim -- --seed N`. --verbose prints the options
// and the full trace (role changes, partitions, heal) as the schedule runs. The soak
// starts from a random seed unless given one, spreads seeds over J worker threads
// (test/sim/sweep.ts) and keeps going past failures, printing each failing seed's report,
// progress every 1,000 seeds, a summary and the totals of every stat. --mutation switches
// a safety fix off (mutations.ts), to see the simulator find the bug it prevents;
// --no-stalls runs a seed without the disk stalls it draws (disk-stalls.ts), as seeds ran
// before they existed.
import { availableParallelism } from 'node:os';
import { DEFAULT_TICKS, describeOptions, drawOptions } from '../options.js';
import { runSchedule } from './simulate.js';
import { formatFailure } from './report.js';
import { raftSweep } from './seed.js';
import { formatFailed, formatTotals, sweep } from '../sweep.js';
import { intArg, parseSeedArgs } from '../../support/seed-args.js';
import { parseMutations, type Mutation } from './mutations.js';

interface Args {
  seed: number | null;
  seeds: number;
  ticks: number;
  verbose: boolean;
  soak: boolean;
  jobs: number;
  mutations: Mutation[];
  stalls: boolean;
}

function usage(msg: string): never {
  console.error(`${msg}\nusage: npm run sim -- [--seed N] [--ticks T] [--seeds K] [--verbose] [--mutation NAME] [--no-stalls]\n       npm run sim:soak -- [--seeds K] [--seed N] [--jobs J] [--ticks T] [--mutation NAME]`);
  process.exit(2);
}

function parseArgs(argv: string[]): Args {
  const a = parseSeedArgs(argv, { ticks: DEFAULT_TICKS }, usage, { jobs: { type: 'string' }, soak: { type: 'boolean' }, mutation: { type: 'string' }, 'no-stalls': { type: 'boolean' } });
  let mutations: Mutation[] = [];
  try {
    mutations = parseMutations(typeof a.extra.mutation === 'string' ? a.extra.mutation : undefined);
  } catch (err) {
    usage(`--mutation: ${(err as Error).message}`);
  }
  return { seed: a.seed, seeds: a.seeds, ticks: a.ticks, verbose: a.verbose, soak: a.extra.soak === true, jobs: a.extra.jobs === undefined ? availableParallelism() : intArg('jobs', a.extra.jobs, 1, usage), mutations, stalls: a.extra['no-stalls'] !== true };
}

function runOne(seed: number, args: Args): boolean {
  if (args.verbose) console.log(describeOptions(drawOptions(seed, args.ticks, args.mutations)));
  const r = runSchedule(seed, { ticks: args.ticks, traceLines: 200, mutations: args.mutations, diskStalls: args.stalls, ...(args.verbose ? { onTrace: (l: string) => console.log(l) } : {}) });
  if (!r.ok) {
    console.log(formatFailure(r));
    return false;
  }
  if (args.verbose || args.seeds === 1) {
    const s = r.stats;
    console.log(`SEED=${seed} ok: ${r.ticks} ticks, ${s['committed']} committed, ${s['leaders']} leader elections, ${s['crashes']} crashes, ` +
      `${s['readsServed']} reads served, ${s['compactions']} compactions, ${s['joins']} joins, ${s['removals']} removals, ` +
      `${s['diskStalls']} disk stalls, ${s['coverHeartbeats']} cover heartbeats`);
  }
  return true;
}

async function soak(args: Args): Promise<number> {
  const base = args.seed ?? Math.floor(Math.random() * 1e9);
  console.log(`soak: ${args.seeds} seeds from SEED=${base} on ${args.jobs} worker(s)`);
  const r = await sweep(raftSweep({ ticks: args.ticks, mutations: args.mutations }), { from: base, count: args.seeds, jobs: args.jobs, log: (l) => console.log(l), progressEvery: 1000 });
  console.log(`soak: ${r.seeds} schedules, ${r.totals.get('ticks') ?? 0} ticks, ${formatFailed(r)}, ${r.wallS.toFixed(1)} s`);
  console.log(formatTotals(r));
  return r.failures.length;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.soak) {
    process.exitCode = (await soak(args)) > 0 ? 1 : 0;
    return;
  }
  const base = args.seed ?? Math.floor(Math.random() * 1e9);
  const started = performance.now();
  let failures = 0;
  for (let k = 0; k < args.seeds; k++) {
    if (!runOne(base + k, args)) failures++;
  }
  if (args.seeds > 1) {
    console.log(`${args.seeds} schedules from SEED=${base}, ${failures} failed, ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  process.exitCode = failures > 0 ? 1 : 0;
}

void main();
