// The nemesis schedule: seeded, every fault category early, once-per-run faults once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { schedule, FAULT_CATEGORIES, FaultPlan, categoryOf, ONCE_PER_RUN } from './nemesis.js';
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

test('fault plan: a failed injection of a kind never injected comes next again, at most three times; a kind that landed is not retried', () => {
  const plan = new FaultPlan(['member-grow', 'wipe-restart', 'kill-all', 'pause-leader']);
  const walked: string[] = [];
  for (let v = plan.next(); v !== undefined; v = plan.next()) {
    walked.push(v);
    if (v === 'member-grow') plan.failed(v); // membership never lands
    else if (v === 'wipe-restart' && walked.filter((x) => x === v).length === 1) assert.equal(plan.failed(v), true);
    else plan.landed(v);
  }
  assert.deepEqual(walked, ['member-grow', 'member-grow', 'member-grow', 'member-grow', 'wipe-restart', 'wipe-restart', 'kill-all', 'pause-leader']);
  assert.deepEqual(plan.owed(), [], 'membership gave up after three retries; the others landed');
  const fresh = new FaultPlan(['kill-all', 'partition-leader', 'pause-leader']);
  fresh.landed(fresh.next()!);
  assert.deepEqual(fresh.owed(), ['partition', 'pause']);

  const again = new FaultPlan(['kill-one', 'kill-leader']);
  again.landed(again.next()!);
  const v = again.next()!;
  assert.equal(again.failed(v), false, 'kill already landed: no retry');
  assert.equal(again.next(), undefined);
});
