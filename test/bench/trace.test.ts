// The per-step trace's arithmetic (bench/lock/trace.ts) and its command line: steps written
// by three "nodes" (the format of src/raft/trace.ts) are lined up with the generator's
// acquires by log index, the follower whose ack came first is the one followed, and
// --trace refuses what it cannot trace. No cluster is started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyseTrace, traceTable } from '../../bench/lock/trace.js';
import { parseOptions, SUITE_ISSUE18, UsageError } from '../../bench/lock/options.js';

test('trace: each acquire is lined up by its log index, following the first follower to ack', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trace-test-'));
  try {
    const leader: string[] = [];
    const f2: string[] = [];
    const f3: string[] = [];
    const samples: { t0: number; t1: number }[] = [];
    // two acquires, 10 ms apart; µs on the "monotonic clock" = performance ms * 1000 + 0
    for (const [k, idx] of [[0, 5], [1, 7]] as const) {
      const t = 1_000_000 + k * 10_000;
      samples.push({ t0: t / 1000, t1: (t + 1000) / 1000 });
      leader.push(`http_recv - -1 - ${t + 50}`, `propose n1 ${idx} - ${t + 100}`, `append_sent n1 ${idx} n2 ${t + 150}`, `append_sent n1 ${idx} n3 ${t + 160}`);
      f2.push(`recv_append n2 ${idx} n1 ${t + 200}`, `saved n2 ${idx} - ${t + 500}`, `ack_sent n2 ${idx} n1 ${t + 520}`);
      // n3 is slower: its ack arrives after n2's and must not be the one followed
      f3.push(`recv_append n3 ${idx} n1 ${t + 210}`, `saved n3 ${idx} - ${t + 700}`, `ack_sent n3 ${idx} n1 ${t + 720}`);
      leader.push(`leader_saved n1 ${idx} - ${t + 450}`, `ack_recv n1 ${idx} n2 ${t + 600}`, `commit n1 ${idx} - ${t + 650}`, `apply n1 ${idx} - ${t + 660}`, `ack_recv n1 ${idx} n3 ${t + 760}`, `http_answer - -1 - ${t + 700}`);
    }
    writeFileSync(join(dir, '1.trace'), `${leader.join('\n')}\n`);
    writeFileSync(join(dir, '2.trace'), `${f2.join('\n')}\n`);
    writeFileSync(join(dir, '3.trace'), `${f3.join('\n')}\n`);
    const r = analyseTrace(dir, samples, 0);
    assert.equal(r.acquires, 2);
    assert.equal(r.matched, 2);
    const p50 = Object.fromEntries(r.rows.map((x) => [x.step, x.p50]));
    assert.deepEqual(p50, {
      http_recv: 50, propose: 50, append_sent: 50, recv_append: 50, saved: 300, ack_sent: 20,
      ack_recv: 80, commit: 50, apply: 10, http_answer: 40, client_recv: 300,
    });
    assert.deepEqual(r.total, { p50: 1000, p99: 1000 });
    assert.deepEqual(r.leaderSave, { p50: 350, p99: 350 });
    assert.match(traceTable(r), /follower: synced save done \| 0\.300 \| 0\.300/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('trace: command line', () => {
  assert.deepEqual(parseOptions(['--trace']).matrix, [{ workload: 'uncontended', clients: 1 }]);
  assert.equal(parseOptions(['--trace']).trace, true);
  assert.equal(parseOptions([]).trace, false);
  assert.deepEqual(parseOptions(['--suite', 'issue18']).matrix, SUITE_ISSUE18);
  assert.throws(() => parseOptions(['--trace', '--compare', 'etcd']), UsageError);
  assert.throws(() => parseOptions(['--trace', '--endpoints', 'http://127.0.0.1:1']), UsageError);
  assert.throws(() => parseOptions(['--trace', '-c', '64']), UsageError);
  assert.throws(() => parseOptions(['--suite', 'nope']), /issue8, issue18/);
});
