// OpsTracker's "held since" for the status page: one time per grant, also for each share
// of a shared lock; a release or a session end forgets a lone grant at once, prune the rest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpsTracker } from '../../../src/server/ops/ops-tracker.js';
import type { ApplyOutput } from '../../../src/lock-fsm/index.js';

const out = (events: ApplyOutput['events'], result: ApplyOutput['result'] = { ok: true, kind: 'noop' }): ApplyOutput => ({ result, events });

test('held since: per grant, shares each their own; lone grants forgotten on release, shares by prune', () => {
  let now = 1000;
  const t = new OpsTracker(() => now, 500);
  t.onApplied(out([{ type: 'granted', name: 'L', sessionId: 'a', fencingToken: 3 }]));
  now = 2000;
  t.onApplied(out([{ type: 'granted', name: 'R', sessionId: 'a', fencingToken: 4, mode: 'shared' }]));
  now = 3000;
  t.onApplied(out([{ type: 'granted', name: 'R', sessionId: 'b', fencingToken: 5, mode: 'shared' }]));
  assert.deepEqual(t.heldSince('L', 3), { since_ms: 1000, exact: true });
  assert.deepEqual(t.heldSince('R', 4), { since_ms: 2000, exact: true });
  assert.deepEqual(t.heldSince('R', 5), { since_ms: 3000, exact: true });
  assert.deepEqual(t.heldSince('R', 6), { since_ms: 500, exact: false }, 'a grant it did not see: at least since it started');
  assert.equal(t.trackedGrants, 3);
  t.onApplied(out([], { ok: true, kind: 'released', name: 'L' }));
  assert.equal(t.heldSince('L', 3).exact, false);
  t.onApplied(out([], { ok: true, kind: 'released', name: 'R' })); // one share of two: which one is not said
  assert.equal(t.trackedGrants, 2);
  t.prune((name, token) => name === 'R' && token === 5);
  assert.equal(t.trackedGrants, 1);
  assert.deepEqual(t.heldSince('R', 5), { since_ms: 3000, exact: true });
  // an exclusive grant after the shares replaces them
  t.onApplied(out([{ type: 'granted', name: 'R', sessionId: 'c', fencingToken: 9 }]));
  assert.equal(t.trackedGrants, 1);
  t.onApplied(out([{ type: 'sessionEnded', sessionId: 'c', reason: 'closed', released: ['R'] }]));
  assert.equal(t.trackedGrants, 0);
});
