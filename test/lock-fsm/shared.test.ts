// Shared (read) locks in the lock FSM: coexisting shared holders, FIFO across modes
// (a waiting exclusive request blocks shared ones behind it), the shared requests at the
// head granted together with their own tokens, release of one share only, session end
// and expiry (lock-delay) releasing shares, and snapshots (docs/lock-fsm.md "Shared locks").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockFsm, assertFsmInvariants, exportState, type ApplyResult } from '../../src/lock-fsm/index.js';
import { Log, decode, encode } from './helpers.js';

function shared(g: Log, name: string, sid: string, waitMs = 0, key?: string): ApplyResult {
  return g.do({ kind: 'acquire', name, sessionId: sid, waitMs, mode: 'shared' }, key === undefined ? {} : { key });
}

test('shared holders coexist, each with its own token; an exclusive request waits for all of them', () => {
  const g = new Log();
  for (const s of ['r1', 'r2', 'w']) g.open(s);
  const a = shared(g, 'L', 'r1');
  const b = shared(g, 'L', 'r2');
  assert.ok(a.ok && a.kind === 'acquired' && a.mode === 'shared');
  assert.ok(b.ok && b.kind === 'acquired' && b.fencingToken > a.fencingToken);
  assert.deepEqual(shared(g, 'L', 'r1'), a, 'a repeated shared acquire returns the same grant');
  assert.deepEqual(g.acquire('L', 'w'), { ok: false, code: 'lock_held' });
  assert.deepEqual(g.acquire('L', 'w', 5000), { ok: true, kind: 'queued', name: 'L', sessionId: 'w', position: 1 });
  const info = g.fsm.getLock('L');
  assert.equal(info.mode, 'shared');
  assert.deepEqual(info.holders?.map((h) => [h.sessionId, h.mode]), [['r1', 'shared'], ['r2', 'shared']]);
  assert.ok(g.fsm.check('L', a.ok && a.kind === 'acquired' ? a.fencingToken : 0));
  // r1 releases its share only: r2 still holds, w still waits
  assert.deepEqual(g.run({ kind: 'release', name: 'L', sessionId: 'r1' }).events.map((e) => e.type), ['released'], 'its share ends; nothing is granted');
  assert.ok(!g.fsm.check('L', (a as { fencingToken: number }).fencingToken), 'a released share no longer checks');
  const out = g.run({ kind: 'release', name: 'L', sessionId: 'r2' });
  assert.deepEqual(out.events.filter((e) => e.type === 'granted').map((e) => e.type === 'granted' && e.sessionId), ['w']);
  assert.equal(g.fsm.getLock('L').holder?.sessionId, 'w');
  assertFsmInvariants(g.fsm);
});

test('FIFO across modes: a waiting writer blocks later readers; the readers at the head are granted together', () => {
  const g = new Log();
  for (const s of ['r0', 'w1', 'r2', 'r3', 'w4', 'r5']) g.open(s);
  shared(g, 'L', 'r0');
  assert.equal((g.acquire('L', 'w1', 5000) as { kind: string }).kind, 'queued');
  assert.deepEqual(shared(g, 'L', 'r2', 5000), { ok: true, kind: 'queued', name: 'L', sessionId: 'r2', position: 2 }, 'a reader behind a waiting writer waits');
  assert.deepEqual(shared(g, 'L', 'r5', 0), { ok: false, code: 'lock_held' });
  shared(g, 'L', 'r3', 5000);
  g.acquire('L', 'w4', 5000);
  shared(g, 'L', 'r5', 5000);
  assert.deepEqual(g.fsm.lockQueue('L').map((w) => `${w.sessionId}:${w.mode}`), ['w1:exclusive', 'r2:shared', 'r3:shared', 'w4:exclusive', 'r5:shared']);
  // r0 leaves: w1 alone
  assert.deepEqual(g.run({ kind: 'release', name: 'L', sessionId: 'r0' }).events.filter((e) => e.type === 'granted').map((e) => e.type === 'granted' && e.sessionId), ['w1']);
  // w1 leaves: r2 and r3 together, in one command, tokens in queue order; w4 still waits
  const ev = g.run({ kind: 'release', name: 'L', sessionId: 'w1' }).events.filter((e) => e.type === 'granted');
  assert.deepEqual(ev.map((e) => e.type === 'granted' && [e.sessionId, e.mode]), [['r2', 'shared'], ['r3', 'shared']]);
  const [t2, t3] = ev.map((e) => (e.type === 'granted' ? e.fencingToken : 0));
  assert.ok(t2! < t3!, 'each grant its own token, increasing');
  assert.deepEqual(g.fsm.lockQueue('L').map((w) => w.sessionId), ['w4', 'r5']);
  assertFsmInvariants(g.fsm);
});

test('a cancelled exclusive wait at the head lets the shared requests behind it in', () => {
  const g = new Log();
  for (const s of ['r0', 'w1', 'r2']) g.open(s);
  shared(g, 'L', 'r0');
  g.acquire('L', 'w1', 5000);
  const since = g.fsm.waitOf('L', 'w1')!.since;
  shared(g, 'L', 'r2', 5000);
  const out = g.run({ kind: 'cancelWait', name: 'L', sessionId: 'w1', since });
  assert.deepEqual(out.events.map((e) => e.type), ['waitEnded', 'granted']);
  assert.deepEqual(g.fsm.getLock('L').holders?.map((h) => h.sessionId), ['r0', 'r2']);
  // and the same when the writer's session ends
  g.open('w3');
  g.open('r4');
  g.acquire('L', 'w3', 5000);
  shared(g, 'L', 'r4', 5000);
  const end = g.run({ kind: 'closeSession', sessionId: 'w3' });
  assert.ok(end.events.some((e) => e.type === 'granted' && e.sessionId === 'r4'));
  assertFsmInvariants(g.fsm);
});

test('no upgrade: an exclusive acquire by a shared holder is refused; a shared acquire by the exclusive holder returns its grant', () => {
  const g = new Log();
  g.open('a');
  g.open('b');
  shared(g, 'L', 'a');
  assert.deepEqual(g.acquire('L', 'a', 5000), { ok: false, code: 'lock_held' });
  const t = g.token('M', 'b');
  const r = shared(g, 'M', 'b');
  assert.ok(r.ok && r.kind === 'acquired' && r.fencingToken === t && r.mode === undefined);
});

test('no upgrade while waiting either: a request joins its session\'s wait only if that wait\'s grant would answer it', () => {
  const g = new Log();
  for (const sid of ['a', 'b', 'c', 'd']) g.open(sid);
  g.acquire('L', 'a');
  // b waits shared: an exclusive request or a campaign of b is refused at once, as for a
  // share held (joining, it would be answered a share); a shared one joins
  const q = shared(g, 'L', 'b', 5000);
  assert.ok(q.ok && q.kind === 'queued');
  assert.deepEqual(g.acquire('L', 'b', 5000), { ok: false, code: 'lock_held', holder: { sessionId: 'a', owner: 'owner-a', fencingToken: g.fsm.getLock('L').holder!.fencingToken } });
  assert.equal(g.do({ kind: 'campaign', name: 'L', sessionId: 'b', value: 'v', waitMs: 5000 }).ok, false);
  const again = shared(g, 'L', 'b', 5000);
  assert.ok(again.ok && again.kind === 'queued' && again.position === 1);
  // c waits exclusively (plain): a shared request joins (an exclusive grant answers any
  // request), a campaign is refused (a name is not both a lock and an election)
  const e = g.acquire('L', 'c', 5000);
  assert.ok(e.ok && e.kind === 'queued');
  const s = shared(g, 'L', 'c', 5000);
  assert.ok(s.ok && s.kind === 'queued' && s.position === 2);
  assert.equal(g.do({ kind: 'campaign', name: 'L', sessionId: 'c', value: 'v', waitMs: 5000 }).ok, false);
  // d campaigns: a plain exclusive request joins (the leader's grant answers it)
  const d = g.do({ kind: 'campaign', name: 'L', sessionId: 'd', value: 'v', waitMs: 5000 });
  assert.ok(d.ok && d.kind === 'queued');
  const p = g.acquire('L', 'd', 5000);
  assert.ok(p.ok && p.kind === 'queued' && p.position === 3);
  // nothing of this changed a wait
  assert.deepEqual(g.fsm.getLock('L').waiters, 3);
  assertFsmInvariants(g.fsm);
});

test('release with a stale token of a share is refused; session end releases shares; expiry starts lock-delay while other shares stay', () => {
  const g = new Log();
  g.open('a', { lockDelayMs: 3000 });
  g.open('b');
  g.open('w');
  const ta = (shared(g, 'L', 'a') as { fencingToken: number }).fencingToken;
  shared(g, 'L', 'b');
  assert.deepEqual(g.do({ kind: 'release', name: 'L', sessionId: 'a', fencingToken: ta + 100 }), { ok: false, code: 'not_holder' });
  g.acquire('L', 'w', 5000);
  const ex = g.run({ kind: 'expireSession', sessionId: 'a' });
  assert.deepEqual(ex.events.map((e) => e.type), ['released', 'lockDelayStarted', 'sessionEnded']);
  assert.deepEqual(g.fsm.getLock('L').holders?.map((h) => h.sessionId), ['b'], 'b keeps its share during the delay');
  assert.equal(g.fsm.getLock('L').inDelay, true);
  assertFsmInvariants(g.fsm);
  // a new reader waits during the delay (no grant while in lock-delay)
  g.open('r');
  assert.deepEqual(shared(g, 'L', 'r', 0), { ok: false, code: 'lock_held' });
  // snapshot in the middle of it all restores to identical bytes
  const copy = LockFsm.fromSnapshot(g.fsm.snapshot(encode), decode);
  assertFsmInvariants(copy);
  assert.deepEqual(exportState(copy), exportState(g.fsm));
  g.do({ kind: 'release', name: 'L', sessionId: 'b' });
  const since = g.fsm.locksInDelay()[0]!.since;
  const end = g.run({ kind: 'endLockDelay', name: 'L', since });
  assert.deepEqual(end.events.map((e) => e.type === 'granted' ? e.sessionId : e.type), ['lockDelayEnded', 'w']);
  const closed = g.do({ kind: 'closeSession', sessionId: 'w' });
  assert.ok(closed.ok && closed.kind === 'session_closed' && closed.released.includes('L'));
  assertFsmInvariants(g.fsm);
});

test("a queued shared acquire's Idempotency-Key answers with its grant once granted", () => {
  const g = new Log();
  g.open('w');
  g.open('r');
  g.token('L', 'w');
  shared(g, 'L', 'r', 5000, 'k1');
  g.do({ kind: 'release', name: 'L', sessionId: 'w' });
  const again = g.run({ kind: 'acquire', name: 'L', sessionId: 'r', waitMs: 5000, mode: 'shared' }, { key: 'k1' });
  assert.equal(again.replayed, true);
  assert.ok(again.result.ok && again.result.kind === 'acquired' && again.result.mode === 'shared');
});
