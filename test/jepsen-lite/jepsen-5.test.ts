// jepsen-lite in `npm test`: a short 5-node run weighted to the partitions only 5 nodes
// have (majorities ring, bridge), plus kills and pauses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runForTest, testSeed } from './support.js';

// 5 clients on the 3 locks, not the default 7: the linearizability search over a 5-node
// partition history grows with the clients' unknown acquires (timeouts, give-ups), and
// with 7 it took 1.6–3.6M of its 5M steps in earlier CI runs and gave up (unknown) in one
// .ci/run and twice beside it, at about 70,000 steps a second on a loaded machine
// (docs/jepsen-lite.md "In `npm test`"). `npm run jepsen -- --nodes 5` keeps 7.
const CLIENTS = 5;

test('jepsen-lite: 5 nodes, 30 s, partitions (ring, bridge, …), kills, pauses: no violation', { timeout: 240_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 5, durationMs: 30_000, seed: testSeed(), faults: ['partition', 'kill', 'pause'], clients: CLIENTS });
  assert.deepEqual(summary.violations, [], text);
  assert.equal(summary.linearizable, true, text);
  assert.ok(summary.grants > 10, `too few grants to mean anything\n${text}`);
  assert.ok(summary.faults.length >= 3, text);
});
