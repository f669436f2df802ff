// jepsen-lite in `npm test`: a short 3-node run of the membership and wipe kinds under load
// (docs/jepsen-lite.md "Faults"): members replaced (the leader or a follower) under new ids
// and under their own id again, a removal sent while another voter is down, growth to four
// voters and back, a leadership transfer during a change, a voter whose data directory is
// lost — between kills and pauses. Every membership variant, member-grow included (a node
// added with member add and started etcd's way, serve --config FILE --node n4 on an empty
// data directory: docs/jepsen-lite.md "Results" has the run that found it refused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runForTest, testSeed } from './support.js';
import { categoryOf } from './nemesis.js';

test('jepsen-lite: 3 nodes, 45 s, membership changes and a lost data directory between kills and pauses: no violation', { timeout: 300_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 3, durationMs: 45_000, seed: testSeed(), faults: ['membership', 'wipe', 'kill', 'pause'] });
  assert.deepEqual(summary.violations, [], text);
  assert.equal(summary.linearizable, true, text);
  assert.ok(summary.grants > 10, `too few grants to mean anything\n${text}`);
  const injected = new Set(summary.faults.filter((f) => !f.failed).map((f) => categoryOf(f.variant as never)));
  for (const c of ['membership', 'wipe'] as const) assert.ok(injected.has(c), `fault kind ${c} was never injected\n${text}`);
});
