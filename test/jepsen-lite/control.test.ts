// The control run that proves the fencing check bites: with fencing disabled in the
// resource, pausing lock holders past their TTL must produce lost updates (Kleppmann's
// case), and the same resource log checked as if fencing were on must be flagged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runForTest, testSeed } from './support.js';

test('jepsen-lite control: without fencing, paused clients cause lost updates', { timeout: 180_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 3, durationMs: 25_000, seed: testSeed(), faults: ['pause-client'], fencing: false, netns: false });
  assert.ok(summary.faults.filter((f) => f.variant === 'pause-client').length >= 3, text);
  assert.ok(summary.resource.lostUpdates > 0, `no lost update without fencing: the test does not bite\n${text}`);
  assert.equal(summary.resource.rejected, 0, text);
  // the lock service itself stayed correct: the unfenced resource is the only victim
  assert.equal(summary.linearizable, true, text);
  assert.deepEqual(summary.violations, [], text);
});
