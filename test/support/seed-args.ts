// The simulators' command lines (`npm run sim`, `sim:soak`, `sim:lock`) share their seed
// options; node:util's parseArgs reads them, this checks the integers.
import { parseArgs } from 'node:util';

export interface SeedArgs {
  /** first seed; null: draw one at random */
  seed: number | null;
  seeds: number;
  ticks: number;
  verbose: boolean;
  /** every flag given, as strings (extra options of one simulator) */
  extra: Record<string, string | boolean | undefined>;
}

/**
 * Parse `--seed N --seeds K --ticks T --verbose` plus `extra` options. Bad input calls
 * `usage` with one line naming the flag (it exits).
 */
export function parseSeedArgs(argv: string[], defaults: { ticks: number }, usage: (msg: string) => never, extra: Record<string, { type: 'string' | 'boolean'; short?: string }> = {}): SeedArgs {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: { seed: { type: 'string' }, seeds: { type: 'string' }, ticks: { type: 'string' }, verbose: { type: 'boolean', short: 'v' }, help: { type: 'boolean', short: 'h' }, ...extra },
    }));
  } catch (err) {
    return usage((err as Error).message);
  }
  if (values.help) usage('');
  const seed = values.seed === undefined ? null : intArg('seed', values.seed, 0, usage);
  return {
    seed,
    seeds: values.seeds === undefined ? 1 : intArg('seeds', values.seeds, 1, usage),
    ticks: values.ticks === undefined ? defaults.ticks : intArg('ticks', values.ticks, 1, usage),
    verbose: values.verbose === true,
    extra: values,
  };
}

/** an integer flag's value, at least `min` */
export function intArg(name: string, v: string | boolean | undefined, min: number, usage: (msg: string) => never): number {
  const n = Number(v);
  if (typeof v !== 'string' || v === '' || !Number.isSafeInteger(n) || n < min) usage(`--${name} needs an integer >= ${min}, got ${typeof v === 'string' ? v : 'nothing'}`);
  return n;
}
