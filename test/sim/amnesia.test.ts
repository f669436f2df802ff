// The amnesia fault's mutation check, cheap enough for every `npm test`: seeds on which
// the sweep (seeds 1..2000, test/sim/sim.test.ts) catches a core without its amnesia
// guard (RaftConfig.testOnlyDisableAmnesiaGuard) losing a committed entry, and passes with
// it. docs/simulation.md, "Mutation table", has the whole sweep's numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSchedule } from './simulate.js';

const SEEDS = [47, 88];

for (const seed of SEEDS) {
  test(`SEED=${seed}: a wiped voter under its old id loses a committed entry without the amnesia guard, and not with it`, () => {
    const off = runSchedule(seed, { amnesiaGuard: false });
    assert.equal(off.ok, false, `SEED=${seed} with the guard off should fail (npm run sim -- --seed ${seed} with SIM_AMNESIA_GUARD=off)`);
    assert.match(off.failure!.kind, /LeaderCompleteness|StateMachineSafety|LogMatching/);
    assert.ok((off.stats['wipes'] ?? 0) > 0);
    const on = runSchedule(seed, { amnesiaGuard: true });
    assert.equal(on.ok, true, `SEED=${seed} with the guard on: ${on.failure?.kind} ${on.failure?.message}`);
  });
}
