// The benchmark's arithmetic and command line (bench/lock): metric scraping, medians over
// repetitions, ratios against the targets (BENCHMARKS.md "Results"), and usage errors. No
// cluster is started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build } from 'hdr-histogram-js';
import { sumMetric } from '../../bench/lock/target.js';
import { busyCell, compare, median, raftlockOnlyNote, resultsTable, subtractionTable, summarize, TARGET_RATIOS } from '../../bench/lock/report.js';
import { parseOptions, SUITE_ISSUE8, SUITE_ISSUE33, SUITE_MODES, UsageError, type Topology } from '../../bench/lock/options.js';
import { supports, type RunResult, type WorkloadName } from '../../bench/lock/workloads.js';

test('sumMetric adds every label set of one metric and ignores metrics that share a prefix', () => {
  const text = [
    '# HELP raftlock_storage_sync_seconds durable storage write latency',
    'raftlock_storage_sync_seconds_bucket{le="0.001"} 3',
    'raftlock_storage_sync_seconds_sum 0.25',
    'raftlock_storage_sync_seconds_count 7',
    'raftlock_transport_messages_sent_total{peer="n2"} 10',
    'raftlock_transport_messages_sent_total{peer="n3"} 12',
    'raftlock_transport_messages_sent_totalx 99',
  ].join('\n');
  assert.equal(sumMetric(text, 'raftlock_storage_sync_seconds_count'), 7);
  assert.equal(sumMetric(text, 'raftlock_storage_sync_seconds_sum'), 0.25);
  assert.equal(sumMetric(text, 'raftlock_transport_messages_sent_total'), 22);
  assert.equal(sumMetric(text, 'absent_metric'), 0);
});

test('median of odd and even counts', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
});

function run(system: 'raftlock' | 'etcd', clients: number, opsPerSec: number, latMs: number[], workload: WorkloadName = 'uncontended'): RunResult {
  const latency = build({ numberOfSignificantValueDigits: 3 });
  for (const ms of latMs) latency.recordValue(ms * 1000);
  return { system, workload, clients, topology: 'leader', client: 'raw', ops: opsPerSec * 10, seconds: 10, opsPerSec, latency, releaseLatency: null, errors: {}, entriesPerOp: 2, fsyncsPerOp: 0.1, syncMs: 1, peerMsgsPerOp: null, cpuMsPerOp: 0.5, busy: { leader: 0.75, followers: [0.2, 0.3], generator: 0.1 } };
}

test('summarize takes medians per row; compare applies the target of that row', () => {
  const rows = summarize([
    run('raftlock', 64, 3000, [1, 2, 3]), run('etcd', 64, 1000, [5, 6, 7]),
    run('raftlock', 64, 2000, [1, 2, 3]), run('etcd', 64, 1200, [5, 6, 7]),
    run('raftlock', 64, 4000, [1, 2, 3]), run('etcd', 64, 900, [5, 6, 7]),
  ]);
  const r = rows.find((x) => x.system === 'raftlock')!;
  assert.equal(r.reps, 3);
  assert.deepEqual(r.opsPerSecRuns, [3000, 2000, 4000]);
  assert.equal(r.opsPerSec, 3000);
  // busy: the leader, the mean of the other members, the generator, as % of one core
  assert.equal(r.leaderBusy, 0.75);
  assert.equal(r.followerBusy, 0.25);
  assert.equal(r.generatorBusy, 0.1);
  assert.equal(busyCell(r), '75% / 25% / 10%');
  assert.equal(busyCell({ leaderBusy: null, followerBusy: null, generatorBusy: null }), '-');
  assert.match(resultsTable(rows), /busy: leader \/ follower \/ generator[\s\S]*75% \/ 25% \/ 10%/);
  // the leader's CPU per operation: 0.75 of a core at 3,000 ops/s = 250 µs
  assert.equal(r.leaderCpuUsPerOp, 250);
  assert.match(resultsTable(rows), /leader CPU µs\/op[\s\S]*\| +250 \| +75% \/ 25% \/ 10%/);
  const [c] = compare(rows);
  assert.ok(c);
  assert.equal(c.etcd, 1000);
  assert.equal(c.ratio, 3);
  assert.equal(c.target, TARGET_RATIOS['uncontended/64']);
  assert.equal(c.throughputMet, true);
  assert.equal(c.p99Met, true);
});

test('command line: defaults, the issue-8 suite, and usage errors', () => {
  const d = parseOptions([]);
  assert.deepEqual(d.matrix, [{ workload: 'uncontended', clients: 16, topology: 'leader', client: 'raw' }]);
  assert.equal(d.durationMs, 10_000);
  assert.equal(d.compare, null);
  assert.equal(d.primeMs, 5_000, 'each started cluster is primed before its first row');
  assert.equal(parseOptions(['--prime', '0']).primeMs, 0);
  assert.throws(() => parseOptions(['--prime', 'soon']), /--prime: expected a duration/);
  assert.deepEqual(parseOptions(['--suite', 'issue8']).matrix, SUITE_ISSUE8.map((r) => ({ ...r, topology: 'leader', client: 'raw' })));
  const m = parseOptions(['-w', 'churn,read', '-c', '1,8', '-d', '1.5s', '--compare', 'etcd']);
  assert.equal(m.matrix.length, 4);
  assert.equal(m.durationMs, 1500);
  assert.equal(m.compare, 'etcd');
  assert.throws(() => parseOptions(['-w', 'bogus']), UsageError);
  assert.throws(() => parseOptions(['-c', '0']), UsageError);
  assert.throws(() => parseOptions(['--compare', 'consul']), UsageError);
  assert.throws(() => parseOptions(['--scale', '10', '--compare', 'etcd']), UsageError);
});

test('shared and semaphore rows: grants/s and p99 beside the exclusive contended row, raftlock only, no ratio made up', () => {
  assert.equal(supports(false, 'shared'), false, 'etcd runs no shared row');
  assert.equal(supports(false, 'semaphore'), false);
  assert.equal(supports(false, 'contended'), true);
  assert.equal(supports(true, 'semaphore'), true);
  const rows = summarize([
    run('raftlock', 16, 500, [2, 4, 8], 'contended'), run('etcd', 16, 100, [9, 10, 11], 'contended'),
    run('raftlock', 16, 900, [1, 2, 3], 'shared'), run('raftlock', 16, 700, [1, 5, 6], 'semaphore'),
  ]);
  const table = resultsTable(rows);
  assert.match(table, /\| shared +\| +16 \| raftlock \| +900 grants\/s \|/);
  assert.match(table, /\| semaphore +\| +16 \| raftlock \| +700 grants\/s \|/);
  assert.deepEqual(compare(rows).map((c) => c.workload), ['contended'], 'only the exclusive row has a ratio');
  const note = raftlockOnlyNote(rows, true);
  assert.match(note ?? '', /^shared and semaphore: raftlock only \(no etcd row and no ratio\): etcd has no shared lock or semaphore primitive/);
  assert.match(note ?? '', /9:1 on 4 locks.*limit 4/);
  assert.equal(raftlockOnlyNote(summarize([run('raftlock', 16, 1, [1], 'contended')]), true), null);
  assert.deepEqual(parseOptions(['--suite', 'modes']).matrix, SUITE_MODES.map((r) => ({ ...r, topology: 'leader', client: 'raw' })));
  assert.deepEqual(parseOptions(['-w', 'shared,semaphore', '-c', '16']).matrix.map((m) => m.workload), ['shared', 'semaphore']);
  assert.throws(() => parseOptions(['--suite', 'nope']), /one of issue8, issue18, modes, issue33/);
});

test('topologies and clients: rows per variant, ratios only between raw clients on the leader, the C=1 subtraction', () => {
  const at = (system: 'raftlock' | 'etcd', topology: Topology, acquireMs: number, releaseMs: number, client: 'raw' | 'sdk' = 'raw'): RunResult => {
    const r = run(system, 1, 1000 / (acquireMs + releaseMs), [acquireMs]);
    const rel = build({ numberOfSignificantValueDigits: 3 });
    rel.recordValue(releaseMs * 1000);
    return { ...r, topology, client, releaseLatency: rel };
  };
  const rows = summarize([
    at('raftlock', 'one', 1.5, 1.4), at('etcd', 'one', 1.0, 0.9),
    at('raftlock', 'leader', 2.5, 2.4), at('etcd', 'leader', 2.0, 1.9),
    at('raftlock', 'follower', 3.5, 3.4), at('etcd', 'follower', 2.1, 2.0),
    at('raftlock', 'leader', 2.6, 2.5, 'sdk'),
  ]);
  assert.equal(rows.length, 7, 'one row per system, topology and client');
  assert.match(resultsTable(rows), /\| topology \| client \|/);
  assert.doesNotMatch(resultsTable(summarize([run('raftlock', 1, 1, [1])])), /topology/, 'the plain table keeps its columns');
  const c = compare(rows);
  assert.equal(c.length, 1, 'the targets compare raw clients on the leader only');
  assert.equal(c[0]!.raftlock, rows.find((r) => r.system === 'raftlock' && r.topology === 'leader' && r.client === 'raw')!.opsPerSec);
  const t = subtractionTable(rows) ?? '';
  assert.match(t, /\| raftlock +\| acquire p50 +\| +1\.50 \| +2\.50 \| +3\.50 \| +\+1\.00 \| +\+1\.00 \|/);
  assert.match(t, /\| etcd +\| release p50 +\| +0\.90 \| +1\.90 \| +2\.00 \| +\+1\.00 \| +\+0\.10 \|/);
  assert.match(t, /\| raftlock − etcd \| acquire p50 +\| +\+0\.50 \| +\+0\.50 \| +\+1\.40 \|/);
  assert.equal(subtractionTable(summarize([run('raftlock', 1, 1, [1])])), null, 'no subtraction from one topology');
  // the command line: topologies × clients, the issue-33 suite, and what cannot be combined
  const m = parseOptions(['-c', '1', '--topology', 'one,follower', '--client', 'raw,sdk']).matrix;
  assert.deepEqual(m.map((e) => `${e.topology}/${e.client}`), ['one/raw', 'one/sdk', 'follower/raw', 'follower/sdk']);
  assert.deepEqual(parseOptions(['--suite', 'issue33']).matrix, SUITE_ISSUE33);
  assert.throws(() => parseOptions(['--topology', 'two']), UsageError);
  assert.throws(() => parseOptions(['--client', 'curl']), UsageError);
  assert.throws(() => parseOptions(['--suite', 'issue33', '--topology', 'one']), UsageError);
  assert.throws(() => parseOptions(['--topology', 'one', '--endpoints', 'http://127.0.0.1:1']), UsageError);
});
