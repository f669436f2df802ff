// jepsen-lite in `npm test`: a short 3-node run with membership changes under load (issue
// 9's fault: a voter, sometimes the leader, is removed through the API and killed; a new
// node with a new id and an empty data dir joins in its place), between kills and pauses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runForTest, testSeed } from './support.js';
import { categoryOf } from './nemesis.js';

test('jepsen-lite: 3 nodes, 30 s, members replaced (leader and followers) between kills and pauses: no violation', { timeout: 240_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 3, durationMs: 30_000, seed: testSeed(), faults: ['membership', 'kill', 'pause'] });
  assert.deepEqual(summary.violations, [], text);
  assert.equal(summary.linearizable, true, text);
  assert.ok(summary.grants > 10, `too few grants to mean anything\n${text}`);
  const replaced = summary.faults.filter((f) => categoryOf(f.variant as never) === 'membership');
  assert.ok(replaced.length >= 1, `no member was replaced\n${text}`);
});
