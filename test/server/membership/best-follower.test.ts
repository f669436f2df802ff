// Which voter a leader hands leadership to (src/server/membership/cluster-ops.ts bestFollower): a
// transfer asked right after a check-quorum tick, when no follower is marked active yet,
// must still find one (a shrink of a cluster under load once failed with 503 "no other
// voting member" for exactly that reason).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bestFollower } from '../../../src/server/membership/cluster-ops.js';

const voters = ['n1', 'n2', 'n3'];

test('the most caught-up active voter other than the leader', () => {
  assert.equal(bestFollower({ n1: { match: 9 }, n2: { match: 7, recentActive: true }, n3: { match: 8, recentActive: true } }, voters, 'n1'), 'n3');
});

test('an active voter is preferred to a more caught-up one not heard from since the last check-quorum tick', () => {
  assert.equal(bestFollower({ n1: { match: 9 }, n2: { match: 7, recentActive: true }, n3: { match: 8, recentActive: false } }, voters, 'n1'), 'n2');
});

test('right after a check-quorum tick (no follower active yet) the most caught-up voter is still chosen', () => {
  assert.equal(bestFollower({ n1: { match: 9 }, n2: { match: 7, recentActive: false }, n3: { match: 8, recentActive: false } }, voters, 'n1'), 'n3');
});

test('no other voter: null', () => {
  assert.equal(bestFollower({ n1: { match: 9 } }, ['n1'], 'n1'), null);
  assert.equal(bestFollower({ n1: { match: 9 }, n4: { match: 9 } }, ['n1'], 'n1'), null, 'a learner is not a voter');
});
