// The seed of every randomized test, one rule for all (README.md "Seeds"): the test's
// variable (FSM_SEED, CRASH_SEED, …: each test keeps the name its docs give) set to an
// integer replays that run; unset or `random`, a fresh seed is drawn, except where the
// test has a fixed default (the simulator sweeps, so CI is reproducible). The seed is
// printed either way, with the line that replays it. A value that is not a seed fails
// loudly instead of silently running another one.

/** a fresh random seed (31 bits: a valid seed for fast-check and seededRng alike) */
export function freshSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}

/** The seed in variable `name`: its integer, undefined when unset, empty or `random`;
 *  anything else throws naming the variable. */
export function seedFromEnv(name: string): number | undefined {
  const v = process.env[name]?.trim();
  if (v === undefined || v === '' || v === 'random') return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new Error(`${name} must be a seed (a non-negative integer, or "random"), got ${JSON.stringify(process.env[name])}`);
  return n;
}

export interface SeedOptions {
  /** what the printed line names: "lessor renewals" */
  what: string;
  /** the seed when the variable is unset (a fixed sweep); `random` still draws one.
   *  Without it every run draws a fresh seed. */
  fallback?: number;
  /** the command that replays, printed after `NAME=seed` */
  replay?: string;
  /** where the line goes: console.log, or a test's t.diagnostic */
  print?: (line: string) => void;
}

/** The seed of one randomized test (seedFromEnv, else the fallback, else fresh), printed. */
export function testSeed(name: string, o: SeedOptions): number {
  const fromEnv = seedFromEnv(name);
  const seed = fromEnv ?? (process.env[name]?.trim() !== 'random' && o.fallback !== undefined ? o.fallback : freshSeed());
  (o.print ?? console.log)(`# ${o.what}: seed=${seed} (replay: ${name}=${seed}${o.replay ? ` ${o.replay}` : ''})`);
  return seed;
}
