// jepsen-lite in `npm test`: a 3-node run of about 60 s with every fault kind (partitions
// and packet faults only as root with network namespaces; otherwise skipped with a line).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_FAULTS, categoryOf } from './nemesis.js';
import { runForTest, testSeed } from './support.js';

test('jepsen-lite: 3 nodes, 60 s, every fault kind: no violation', { timeout: 300_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 3, durationMs: 60_000, seed: testSeed(), faults: [...DEFAULT_FAULTS] });
  assert.deepEqual(summary.violations, [], text);
  assert.equal(summary.linearizable, true, text);
  assert.ok(summary.grants > 30, `too few grants to mean anything\n${text}`);
  const injected = new Set(summary.faults.map((f) => categoryOf(f.variant as never)));
  for (const c of DEFAULT_FAULTS) {
    if (summary.skippedCategories.includes(c)) continue;
    assert.ok(injected.has(c), `fault kind ${c} was never injected\n${text}`);
  }
  assert.ok(summary.faults.some((f) => f.variant === 'kill-all'), text);
});
