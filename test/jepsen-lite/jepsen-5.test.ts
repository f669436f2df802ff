// jepsen-lite in `npm test`: a short 5-node run weighted to the partitions only 5 nodes
// have (majorities ring, bridge), plus kills and pauses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runForTest, testSeed } from './support.js';

test('jepsen-lite: 5 nodes, 30 s, partitions (ring, bridge, …), kills, pauses: no violation', { timeout: 240_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 5, durationMs: 30_000, seed: testSeed(), faults: ['partition', 'kill', 'pause'] });
  assert.deepEqual(summary.violations, [], text);
  assert.equal(summary.linearizable, true, text);
  assert.ok(summary.grants > 10, `too few grants to mean anything\n${text}`);
  assert.ok(summary.faults.length >= 3, text);
});
