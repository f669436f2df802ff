// jepsen-lite in `npm test`: a 3-node run of about 60 s with every fault kind (partitions
// and packet faults only as root with network namespaces; otherwise skipped with a line).
// Beside the five exclusive-lock clients, two clients run the shared-lock workload and two
// the semaphore workload (docs/jepsen-lite.md "Workloads"), so the same faults and the
// same minute check shared locks and semaphores too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_FAULTS, categoryOf } from './nemesis.js';
import { runForTest, testSeed } from './support.js';
import type { Workload } from './workloads.js';

/** c1…c9: lock ×5, shared ×2, semaphore ×2 (assigned round-robin from this list) */
const WORKLOADS: Workload[] = ['lock', 'shared', 'lock', 'semaphore', 'lock', 'shared', 'lock', 'semaphore', 'lock'];

test('jepsen-lite: 3 nodes, 60 s, every fault kind, exclusive and shared locks and a semaphore: no violation', { timeout: 300_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 3, durationMs: 60_000, seed: testSeed(), faults: [...DEFAULT_FAULTS], workloads: WORKLOADS, clients: WORKLOADS.length });
  assert.deepEqual(summary.violations, [], text);
  assert.equal(summary.linearizable, true, text);
  assert.ok(summary.grants > 30, `too few grants to mean anything\n${text}`);
  assert.ok(summary.shared.sharedGrants > 0 && summary.shared.exclusiveGrants > 0, `the shared-lock workload got no shared or no exclusive grant\n${text}`);
  assert.ok(summary.semaphore.grants > 0, `the semaphore workload got no grant\n${text}`);
  const injected = new Set(summary.faults.map((f) => categoryOf(f.variant as never)));
  for (const c of DEFAULT_FAULTS) {
    if (summary.skippedCategories.includes(c)) continue;
    assert.ok(injected.has(c), `fault kind ${c} was never injected\n${text}`);
  }
  assert.ok(summary.faults.some((f) => f.variant === 'kill-all'), text);
});
