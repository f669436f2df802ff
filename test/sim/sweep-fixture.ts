// A mode for sweep.test.ts: seed 3 loops forever, seed 5 throws, seed 7 awaits a promise that
// never settles, seed 9 fails with a report; every seed counts `one` and itself.
import type { SeedOutcome, SweepMode } from './sweep.js';

export async function runSeed(seed: number, args: { hangs: boolean }): Promise<SeedOutcome> {
  if (args.hangs && seed === 3) for (;;);
  if (args.hangs && seed === 5) throw new Error('seed 5 broke');
  if (args.hangs && seed === 7) await new Promise(() => {});
  return { ok: seed !== 9, counters: { one: 1, seed }, maxima: { seedMax: seed }, ...(seed === 9 ? { report: 'SEED=9 FAILED on purpose' } : {}) };
}

export function fixtureSweep(hangs: boolean, hangMs: number): SweepMode<{ hangs: boolean }> {
  return { module: import.meta.url, args: { hangs }, hangMs, reproduce: (seed) => `fixture --seed ${seed}` };
}
