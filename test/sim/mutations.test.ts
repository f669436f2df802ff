// The mutation table's guard (docs/simulation.md "Mutation table"): with a safety fix
// switched off, known seeds of `npm test`'s normal sweep (sim.test.ts: seeds 1..2000,
// 2,000 ticks) must fail a safety checker, and the same seeds must pass with the fix on.
// A few seeds, so this costs seconds; the full sweep with the fix off is the command in
// the table. If a change to the simulator moves these seeds, find new ones with
// `SIM_MUTATIONS=<name> node --test dist/test/sim/sim.test.js` and update both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSchedule } from './simulate.js';
import { formatFailure } from './report.js';
import { parseMutations, type Mutation } from './mutations.js';

const NOT_SAFETY = new Set(['Liveness', 'Stability', 'Exception']);

const CASES: { mutation: Mutation; seeds: number[] }[] = [
  // a new leader changes membership before its term commits (conf-churn.ts)
  { mutation: 'conf-change-before-term-commit', seeds: [45, 144] },
  // a wiped voter comes back under its old id and votes with forgotten state (amnesia fault)
  { mutation: 'amnesia-guard-off', seeds: [50, 86] },
];

for (const { mutation, seeds } of CASES) {
  test(`mutation ${mutation}: seeds ${seeds.join(', ')} fail a safety checker with the fix off, and pass with it on`, () => {
    for (const seed of seeds) {
      const off = runSchedule(seed, { mutations: [mutation], traceLines: 40 });
      assert.equal(off.ok, false, `SEED=${seed} with ${mutation}: the simulator no longer finds the bug (see docs/simulation.md "Mutation table")`);
      assert.ok(!NOT_SAFETY.has(off.failure!.kind), `SEED=${seed} with ${mutation} failed, but not a safety checker:\n${formatFailure(off)}`);
      const on = runSchedule(seed, { traceLines: 40 });
      assert.equal(on.ok, true, on.ok ? '' : formatFailure(on));
    }
  });
}

test('mutation names are checked: an unknown one is an error naming the known ones', () => {
  assert.deepEqual(parseMutations(undefined), []);
  assert.deepEqual(parseMutations(' conf-change-before-term-commit , '), ['conf-change-before-term-commit']);
  assert.throws(() => parseMutations('conf-change-before-term-comit'), /unknown mutation "conf-change-before-term-comit" \(known: conf-change-before-term-commit/);
});
