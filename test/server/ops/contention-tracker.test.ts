// The status page's contention data (src/server/ops/contention-tracker.ts): the most contended
// locks with their longest current wait, seeded from the state for waits this node did not
// see begin, and the per-second grants and waits of the live chart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockFsm, type Command } from '../../../src/lock-fsm/index.js';
import { ContentionTracker, ACTIVITY_SECONDS } from '../../../src/server/ops/contention-tracker.js';

function rig() {
  let now = 1_000_000;
  const fsm = new LockFsm();
  let index = 0;
  const t = new ContentionTracker(() => now);
  const run = (cmd: Command): void => t.onApplied(fsm.apply(++index, { atMs: 1, cmd }));
  for (const s of ['h', 'a', 'b', 'c']) run({ kind: 'openSession', sessionId: s, ttlMs: 60_000, owner: `o-${s}`, lockDelayMs: 0 });
  return { fsm, t, run, tick: (ms: number) => (now += ms), now: () => now };
}

test('most contended locks: most waiters first, the oldest wait, the holder; ended waits are forgotten', () => {
  const { fsm, t, run, tick, now } = rig();
  run({ kind: 'acquire', name: 'x', sessionId: 'h', waitMs: 0 });
  run({ kind: 'acquire', name: 'y', sessionId: 'h', waitMs: 0 });
  const t0 = now();
  run({ kind: 'acquire', name: 'x', sessionId: 'a', waitMs: 5000 });
  tick(1500);
  run({ kind: 'acquire', name: 'x', sessionId: 'b', waitMs: 5000 });
  run({ kind: 'acquireAll', names: ['y', 'z'], sessionId: 'c', waitMs: 5000 });
  const rows = t.contended(fsm, 10);
  assert.deepEqual(rows.map((r) => [r.name, r.waiters]), [['x', 2], ['y', 1], ['z', 1]]);
  assert.equal(rows[0]?.waiting_since_ms, t0);
  assert.equal(rows[0]?.waiting_since_exact, true);
  assert.equal(rows[0]?.holder?.owner, 'o-h');
  assert.equal(rows[2]?.holder, undefined, 'z is free, kept for the set');
  tick(500);
  run({ kind: 'release', name: 'x', sessionId: 'h' });
  assert.deepEqual(t.contended(fsm, 10).map((r) => [r.name, r.waiters]), [['x', 1], ['y', 1], ['z', 1]]);
  run({ kind: 'closeSession', sessionId: 'c' });
  assert.deepEqual(t.contended(fsm, 10).map((r) => r.name), ['x']);
  assert.equal(t.trackedWaits, 1);
  assert.deepEqual(t.contended(fsm, 0), []);
});

test('waits that began before the node watched are seeded from the state, marked inexact', () => {
  const { fsm, run, now } = rig();
  run({ kind: 'acquire', name: 'x', sessionId: 'h', waitMs: 0 });
  run({ kind: 'acquire', name: 'x', sessionId: 'a', waitMs: 5000 });
  run({ kind: 'acquireAll', names: ['x', 'w'], sessionId: 'b', waitMs: 5000 });
  const fresh = new ContentionTracker(() => now() + 10);
  const rows = fresh.contended(fsm, 10);
  assert.deepEqual(rows.map((r) => [r.name, r.waiters, r.waiting_since_exact]), [['x', 2, false], ['w', 1, false]]);
});

test('activity: grants per second and the wait of the granted, the last minute with gaps as zeros', () => {
  const { t, run, tick } = rig();
  run({ kind: 'acquire', name: 'x', sessionId: 'h', waitMs: 0 });
  run({ kind: 'acquire', name: 'x', sessionId: 'a', waitMs: 5000 });
  tick(2000);
  run({ kind: 'release', name: 'x', sessionId: 'h' });
  const pts = t.activity();
  assert.equal(pts.length, ACTIVITY_SECONDS);
  const last = pts[pts.length - 1];
  assert.deepEqual({ grants: last?.grants, waited: last?.waited, avg: last?.wait_avg_ms, max: last?.wait_max_ms }, { grants: 1, waited: 1, avg: 2000, max: 2000 });
  assert.equal(pts.reduce((s, p) => s + p.grants, 0), 2);
  tick(ACTIVITY_SECONDS * 1000);
  assert.equal(t.activity().reduce((s, p) => s + p.grants, 0), 0, 'older than a minute: gone');
});
