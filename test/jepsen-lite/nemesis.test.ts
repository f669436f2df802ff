// The nemesis schedule: seeded, every fault category early, once-per-run faults once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { schedule, FAULT_CATEGORIES, categoryOf, ONCE_PER_RUN } from './nemesis.js';
import { seededRng } from '../../src/raft/core/rng.js';

test('nemesis schedule: seeded, every category in the first round, once-per-run faults once', () => {
  for (const seed of [1, 2, 3, 99]) {
    const a = schedule(seededRng(seed), FAULT_CATEGORIES, 3, 50);
    assert.deepEqual(a, schedule(seededRng(seed), FAULT_CATEGORIES, 3, 50), `seed ${seed} replays`);
    assert.deepEqual(new Set(a.slice(0, FAULT_CATEGORIES.length).map(categoryOf)), new Set(FAULT_CATEGORIES));
    for (const once of ONCE_PER_RUN) assert.equal(a.filter((v) => v === once).length, 1);
  }
  assert.ok(schedule(seededRng(5), ['partition'], 5, 40).includes('partition-ring'));
  // --emphasise kill-all: once more in every round after the first
  const k = schedule(seededRng(5), ['kill'], 3, 41, ['kill-all']);
  assert.equal(k.filter((v) => v === 'kill-all').length, 1 + 40 / 4); // rounds of kill-one, kill-leader, kill-minority, kill-all
  assert.ok(!schedule(seededRng(5), ['partition'], 3, 40).includes('partition-ring'));
});
