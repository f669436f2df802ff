// The per-step trace's arithmetic (bench/lock/trace.ts) and its command line: steps written
// by three "nodes" (the format of src/raft/trace.ts) are lined up with the generator's
// acquires by log index, the follower whose ack came first is the one followed, and
// --trace refuses what it cannot trace. No cluster is started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyseTrace, slowestTable, traceTable } from '../../bench/lock/trace.js';
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

test('trace: turns per step from the loop counts, one-member clusters, loops per process and the slowest requests', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trace-test-'));
  try {
    // a one-member cluster: request in, propose and save in loop turn 10, save done and
    // commit/apply/answer in turn 11; a GC pause of 2 ms inside the second acquire
    const n1: string[] = ['loop - -1 - 1000000 1 5'];
    const samples: { t0: number; t1: number }[] = [];
    for (const [k, idx] of [[0, 5], [1, 7]] as const) {
      const t = 1_000_000 + k * 10_000;
      const l = 10 + 2 * k;
      samples.push({ t0: t / 1000, t1: (t + 1000 + k * 4000) / 1000 });
      n1.push(`http_recv - -1 - ${t + 50} ${l} 0`, `propose n1 ${idx} - ${t + 100} ${l} 0`, `save_start n1 ${idx} - ${t + 110} ${l} 1`, `leader_saved n1 ${idx} - ${t + 400} ${l + 1} 0`,
        `commit n1 ${idx} - ${t + 410} ${l + 1} 0`, `apply n1 ${idx} - ${t + 420} ${l + 1} 0`, `http_answer - -1 - ${t + 500} ${l + 1} 0`);
    }
    n1.push('gc - -1 1 1011000 14 2000', 'tick n1 -1 - 1012000 14 0', 'loop - -1 - 1015000 21 25');
    writeFileSync(join(dir, '1.trace'), `${n1.join('\n')}\n`);
    const r = analyseTrace(dir, samples, 0, 2);
    assert.equal(r.matched, 2, 'a one-member cluster has no follower steps to wait for');
    const turns = Object.fromEntries(r.rows.map((x) => [x.step, x.turnsP50]));
    assert.deepEqual(turns, { http_recv: null, propose: 0, commit: 1, apply: 0, http_answer: 0, client_recv: null });
    assert.equal(r.leaderTurnsP50, 1);
    assert.match(traceTable(r), /leader: proposed \(entered the core\) \| 0\.050 \| 0\.050 \| \d+% \| 0 \(0\) \|/);
    // per process, between the loop samples inside the window: 20 iterations and 20 events over two requests
    assert.deepEqual(r.processes, [{ node: 'n1', iterationsPerOp: 10, eventsPerOp: 10, gcCount: 1, gcMs: 2 }]);
    // the slowest first: the 5 ms acquire, which the GC pause and a tick overlapped
    assert.equal(r.slowest.length, 2);
    assert.equal(r.slowest[0]!.ms, 5);
    assert.deepEqual(r.slowest[0]!.gc, { n1: 2 });
    assert.equal(r.slowest[0]!.ticks, 1);
    assert.equal(r.slowest[0]!.worstStep, 'client_recv');
    assert.deepEqual(r.slowest[0]!.longestSave, { n1: 0.29 });
    assert.match(slowestTable(r, 'uncontended C=1'), /\| 1 \| 5\.00 \| client has the answer \(\+4\.00\) \| n1 2\.0 \| n1 0\.3 \| 1 \| 0 \|/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('trace: command line', () => {
  assert.deepEqual(parseOptions(['--trace']).matrix, [{ workload: 'uncontended', clients: 1, topology: 'leader', client: 'raw' }]);
  assert.equal(parseOptions(['--trace']).trace, true);
  assert.equal(parseOptions([]).trace, false);
  assert.deepEqual(parseOptions(['--suite', 'issue18']).matrix, SUITE_ISSUE18.map((r) => ({ ...r, topology: 'leader', client: 'raw' })));
  assert.throws(() => parseOptions(['--trace', '--compare', 'etcd']), UsageError);
  assert.throws(() => parseOptions(['--trace', '--endpoints', 'http://127.0.0.1:1']), UsageError);
  // any one row can be traced (the slowest requests); several cannot
  assert.deepEqual(parseOptions(['--trace', '-w', 'contended', '-c', '64']).matrix, [{ workload: 'contended', clients: 64, topology: 'leader', client: 'raw' }]);
  assert.throws(() => parseOptions(['--trace', '-c', '1,64']), UsageError);
  assert.throws(() => parseOptions(['--trace', '--suite', 'issue18']), UsageError);
  assert.throws(() => parseOptions(['--suite', 'nope']), /issue8, issue18/);
});
