// jepsen-lite in `npm test`: a 3-node run of about 60 s with the classic fault kinds
// (partitions and packet faults only as root with network namespaces; otherwise skipped
// with a line) and revocations. Beside the four exclusive-lock clients, two clients run the
// shared-lock workload, two the semaphore workload and two the election workload
// (docs/jepsen-lite.md "Workloads"), and one watch stream per node follows every change:
// the same faults and the same minute check shared locks, semaphores (one resized),
// elections, revocation, max hold and the watch feed too, each linearizable against the
// reference model. The membership, wipe, corrupt and clock kinds have their own short runs
// (jepsen-membership.test.ts, jepsen-disk-clock.test.ts): all of them do not fit one minute.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { categoryOf, type FaultCategory } from './nemesis.js';
import { runForTest, testSeed } from './support.js';
import type { Workload } from './workloads.js';

/** c1…c10: lock ×4, shared ×2, semaphore ×2, election ×2 (assigned round-robin from this list) */
const WORKLOADS: Workload[] = ['lock', 'shared', 'election', 'semaphore', 'lock', 'shared', 'lock', 'semaphore', 'election', 'lock'];
const FAULTS: FaultCategory[] = ['partition', 'kill', 'pause', 'pause-client', 'packet', 'unsynced', 'revoke'];

test('jepsen-lite: 3 nodes, 60 s, the classic fault kinds and revocations, exclusive and shared locks, semaphores, an election, a watch stream per node: no violation', { timeout: 300_000 }, async (t) => {
  const { summary, text } = await runForTest(t, { nodes: 3, durationMs: 60_000, seed: testSeed(), faults: FAULTS, workloads: WORKLOADS, clients: WORKLOADS.length, watch: true });
  assert.deepEqual(summary.violations, [], text);
  assert.equal(summary.linearizable, true, text);
  assert.ok(summary.grants > 30, `too few grants to mean anything\n${text}`);
  assert.ok(summary.shared.sharedGrants > 0 && summary.shared.exclusiveGrants > 0, `the shared-lock workload got no shared or no exclusive grant\n${text}`);
  assert.ok(summary.semaphore.grants > 0, `the semaphore workload got no grant\n${text}`);
  assert.ok(summary.election.grants > 0, `the election workload elected nobody\n${text}`);
  assert.ok(summary.watch !== undefined && summary.watch.matched > 0, `the watch streams saw no acknowledged operation\n${text}`);
  for (const k of ['lock', 'election', 'semaphore'] as const) assert.ok(summary.perLock.some((p) => p.kind === k), `no ${k} was checked for linearizability\n${text}`);
  const injected = new Set(summary.faults.filter((f) => !f.failed).map((f) => categoryOf(f.variant as never)));
  for (const c of FAULTS) {
    if (summary.skippedCategories.includes(c)) continue;
    assert.ok(injected.has(c), `fault kind ${c} was never injected\n${text}`);
  }
  assert.ok(summary.faults.some((f) => f.variant === 'kill-all'), text);
});
