// jepsen-lite in `npm test`: a 3-node run of about 60 s with every fault kind (partitions
// and packet faults only as root with network namespaces; otherwise skipped with a line).
// Beside the four exclusive-lock clients, two clients run the shared-lock workload, two
// the semaphore workload and two the election workload (docs/jepsen-lite.md "Workloads"),
// the nemesis also revokes the election's leader, and one watch stream per node follows
// every change: the same faults and the same minute check shared locks, semaphores,
// elections, revocation, max hold and the watch feed too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_FAULTS, categoryOf, type FaultCategory } from './nemesis.js';
import { runForTest, testSeed } from './support.js';
import type { Workload } from './workloads.js';

/** c1…c10: lock ×4, shared ×2, semaphore ×2, election ×2 (assigned round-robin from this list) */
const WORKLOADS: Workload[] = ['lock', 'shared', 'election', 'semaphore', 'lock', 'shared', 'lock', 'semaphore', 'election', 'lock'];
const FAULTS: FaultCategory[] = [...DEFAULT_FAULTS, 'revoke'];

test('jepsen-lite: 3 nodes, 60 s, every fault kind and revocations, exclusive and shared locks, a semaphore, an election, a watch stream per node: no violation', { timeout: 300_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 3, durationMs: 60_000, seed: testSeed(), faults: FAULTS, workloads: WORKLOADS, clients: WORKLOADS.length, watch: true });
  assert.deepEqual(summary.violations, [], text);
  assert.equal(summary.linearizable, true, text);
  assert.ok(summary.grants > 30, `too few grants to mean anything\n${text}`);
  assert.ok(summary.shared.sharedGrants > 0 && summary.shared.exclusiveGrants > 0, `the shared-lock workload got no shared or no exclusive grant\n${text}`);
  assert.ok(summary.semaphore.grants > 0, `the semaphore workload got no grant\n${text}`);
  assert.ok(summary.election.grants > 0, `the election workload elected nobody\n${text}`);
  assert.ok(summary.watch !== undefined && summary.watch.matched > 0, `the watch streams saw no acknowledged operation\n${text}`);
  const injected = new Set(summary.faults.map((f) => categoryOf(f.variant as never)));
  for (const c of FAULTS) {
    if (summary.skippedCategories.includes(c)) continue;
    assert.ok(injected.has(c), `fault kind ${c} was never injected\n${text}`);
  }
  assert.ok(summary.faults.some((f) => f.variant === 'kill-all'), text);
});
