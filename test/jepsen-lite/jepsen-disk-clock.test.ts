// jepsen-lite in `npm test`: a short 3-node run of the corrupt and clock kinds (docs/jepsen-lite.md
// "Faults"): a node's LevelDB directory damaged while it is down (a torn log tail, a flipped
// bit, a missing file) — it must recover without losing an acknowledged entry or refuse to
// start with one line naming its directory, and never say it is ready while behind — and
// one node's clock running fast or slow or stepping, judged against the lease's safety
// margin (README "Guarantees"). Clock faults are skipped with a line without libfaketime.
// (`corrupt-lost-ack` runs only when asked for: docs/jepsen-lite.md "Faults".)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runForTest, testSeed } from './support.js';
import { categoryOf } from './nemesis.js';

test('jepsen-lite: 3 nodes, 45 s, damaged disks and clocks off their rate: no violation', { timeout: 300_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 3, durationMs: 45_000, seed: testSeed(), faults: ['corrupt', 'clock', 'pause-client'] });
  assert.deepEqual(summary.violations, [], text);
  assert.equal(summary.linearizable, true, text);
  assert.ok(summary.grants > 10, `too few grants to mean anything\n${text}`);
  const injected = new Set(summary.faults.filter((f) => !f.failed).map((f) => categoryOf(f.variant as never)));
  for (const c of ['corrupt', 'clock'] as const) {
    if (summary.skippedCategories.includes(c)) continue;
    assert.ok(injected.has(c), `fault kind ${c} was never injected\n${text}`);
  }
});
