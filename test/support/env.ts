// Test settings from the environment (SIM_SCHEDULES=…, SIM_SEED=random, …), checked so a
// typo fails loudly instead of silently running the default.

export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${v}`);
  return n;
}

/** a seed: the variable's integer, a fresh random one for `random`, else the fallback */
export function envSeed(name: string, fallback: number): number {
  return process.env[name] === 'random' ? Math.floor(Math.random() * 1e9) : envInt(name, fallback);
}
