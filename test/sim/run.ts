// The simulator's command line (TigerBeetle's `vopr` in spirit):
//   npm run sim -- --seed N [--ticks T] [--seeds K] [--verbose]
// runs seed N (or K seeds from N). A failing seed prints SEED=N, every option, the
// failure and `reproduce: npm run sim -- --seed N`; --verbose also prints the options and
// the trace (role changes, partitions, heal) of every seed as it runs.
import { describeOptions, drawOptions } from './options.js';
import { runSchedule } from './simulate.js';
import { formatFailure } from './report.js';

interface Args {
  seed: number;
  seeds: number;
  ticks: number;
  verbose: boolean;
}

function usage(msg: string): never {
  console.error(`${msg}\nusage: npm run sim -- [--seed N] [--ticks T] [--seeds K] [--verbose]`);
  process.exit(2);
}

function parseArgs(argv: readonly string[]): Args {
  const out: Args = { seed: Date.now() % 1_000_000_007, seeds: 1, ticks: 2000, verbose: false };
  const int = (name: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (v === undefined || !Number.isSafeInteger(n) || n < min) usage(`--${name} needs an integer >= ${min}, got ${v ?? 'nothing'}`);
    return n;
  };
  for (let k = 0; k < argv.length; k++) {
    const [flag, inline] = argv[k]!.split('=', 2) as [string, string | undefined];
    const value = (): string | undefined => inline ?? argv[++k];
    switch (flag) {
      case '--seed': out.seed = int('seed', value(), 0); break;
      case '--seeds': out.seeds = int('seeds', value(), 1); break;
      case '--ticks': out.ticks = int('ticks', value(), 1); break;
      case '--verbose': case '-v': out.verbose = true; break;
      case '--help': case '-h': usage('');
      // falls through (usage exits)
      default: usage(`unknown argument ${argv[k]}`);
    }
  }
  return out;
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const started = performance.now();
  let ticks = 0, failures = 0;
  for (let k = 0; k < args.seeds; k++) {
    const seed = args.seed + k;
    if (args.verbose) console.log(describeOptions(drawOptions(seed, args.ticks)));
    const r = runSchedule(seed, { ticks: args.ticks, traceLines: 200, ...(args.verbose ? { onTrace: (l: string) => console.log(l) } : {}) });
    ticks += r.ticks;
    if (!r.ok) {
      failures++;
      console.log(formatFailure(r));
      if (args.seeds === 1) break;
    } else if (args.verbose || args.seeds === 1) {
      console.log(`SEED=${seed} ok: ${r.ticks} ticks, ${r.stats['committed']} committed, ${r.stats['leaders']} leaders, ` +
        `${r.stats['crashes']} crashes, ${r.stats['readsServed']} reads`);
    }
    if (args.seeds > 1 && (k + 1) % 1000 === 0) {
      console.log(`${k + 1}/${args.seeds} seeds, ${failures} failed, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
  }
  const secs = (performance.now() - started) / 1000;
  console.log(`${args.seeds} schedule(s), ${ticks} ticks, ${failures} failed, ${secs.toFixed(1)} s`);
  process.exitCode = failures > 0 ? 1 : 0;
}

main();
