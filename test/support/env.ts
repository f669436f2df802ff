// Test settings from the environment (SIM_SCHEDULES=…, …), checked so a typo fails loudly
// instead of silently running the default. Seeds: test/support/seed.ts.

export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${v}`);
  return n;
}
