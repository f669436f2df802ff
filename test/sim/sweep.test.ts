// The sweep runner both simulator modes use (sweep.ts, docs/simulation.md "Sweeps"): every
// seed runs once, counters are totalled, and a seed that hangs, throws or never settles is
// a failing seed named in its report while the rest of the sweep goes on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sweep, formatFailed, formatTotals } from './sweep.js';
import { fixtureSweep } from './sweep-fixture.js';

test('sweep: every seed once over the workers, counters summed, maxima kept, failures by seed', async () => {
  const lines: string[] = [];
  const r = await sweep(fixtureSweep(false, 60_000), { from: 1, count: 12, jobs: 3, log: (l) => lines.push(l), progressEvery: 5 });
  assert.equal(r.seeds, 12);
  assert.equal(formatTotals(r), `totals: one=12 seed=${(12 * 13) / 2}`);
  assert.equal(r.maxima.get('seedMax'), 12);
  assert.equal(formatFailed(r), '1 failed (seeds 9)');
  assert.equal(r.failures[0]!.report, 'SEED=9 FAILED on purpose');
  assert.ok(lines.includes('\nSEED=9 FAILED on purpose\n'), lines.join('|'));
  assert.deepEqual(lines.filter((l) => /^\d+\/12 seeds/.test(l)).map((l) => l.split(',')[0]), ['5/12 seeds', '10/12 seeds']);
});

test('sweep: a seed that loops, throws or never settles fails with its seed named; the others run', async () => {
  const r = await sweep(fixtureSweep(true, 1500), { from: 1, count: 10, jobs: 2 });
  assert.equal(r.seeds, 10);
  assert.deepEqual(r.failures.map((f) => f.seed), [3, 5, 7, 9]);
  const report = (seed: number): string => r.failures.find((f) => f.seed === seed)!.report;
  assert.match(report(3), /^FAILED Hang: seed 3 ran over 1\.5 s[^]*\nSEED=3\nreproduce: fixture --seed 3$/);
  assert.match(report(5), /^FAILED Exception: seed 5 threw out of its worker: Error: seed 5 broke/);
  assert.match(report(7), /^FAILED Hang: seed 7 ran over 1\.5 s/);
  // the lost seeds counted nothing; the other seven did (9 fails by its own report)
  assert.equal(r.totals.get('one'), 7);
});
