// Semaphores in the lock FSM (docs/lock-fsm.md "Semaphores"): the first acquire sets the
// limit, limit_mismatch, strict FIFO (a large head blocks smaller requests), resize,
// release, session end and expiry, wait timeouts (semCancelWait naming its wait),
// idempotency and snapshots (version 2; version 1 snapshots still restore).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Lessor, LockFsm, assertFsmInvariants, exportState, type ApplyResult } from '../../src/lock-fsm/index.js';
import { Log, decode, encode } from './helpers.js';

function sem(g: Log, sid: string, permits: number, limit = 4, waitMs = 0, key?: string): ApplyResult {
  return g.do({ kind: 'semAcquire', name: 'S', sessionId: sid, limit, permits, waitMs }, key === undefined ? {} : { key });
}

test('permits up to the limit; full without wait_ms; the first acquire sets the limit; limit_mismatch', () => {
  const g = new Log();
  for (const s of ['a', 'b', 'c']) g.open(s);
  const a = sem(g, 'a', 3);
  assert.ok(a.ok && a.kind === 'sem_acquired' && a.permits === 3 && a.limit === 4);
  assert.deepEqual(sem(g, 'a', 3), a, 'a second acquire by a holder returns its grant');
  assert.deepEqual(sem(g, 'b', 2), { ok: false, code: 'semaphore_full', inUse: 3, limit: 4 });
  assert.deepEqual(sem(g, 'b', 1, 5), { ok: false, code: 'limit_mismatch', limit: 4 });
  const b = sem(g, 'b', 1);
  assert.ok(b.ok && b.kind === 'sem_acquired' && b.fencingToken > (a as { fencingToken: number }).fencingToken);
  assert.deepEqual(g.fsm.getSemaphore('S').inUse, 4);
  assert.deepEqual(sem(g, 'c', 5, 4, 1000), { ok: false, code: 'semaphore_full', inUse: 4, limit: 4 }, 'more than the limit never queues');
  assert.equal(g.fsm.counts().semaphoresInUse, 4);
  g.do({ kind: 'semRelease', name: 'S', sessionId: 'a' });
  g.do({ kind: 'semRelease', name: 'S', sessionId: 'b' });
  assert.deepEqual(g.fsm.getSemaphore('S'), { name: 'S', limit: 0, inUse: 0, holders: [], waiters: [] }, 'an idle semaphore keeps no state');
  assert.ok(sem(g, 'c', 1, 7).ok, 'so the next acquire sets a new limit');
  assert.deepEqual(g.do({ kind: 'semRelease', name: 'S', sessionId: 'a' }), { ok: false, code: 'not_holder' });
  assertFsmInvariants(g.fsm);
});

test('strict FIFO: a large request at the head blocks smaller ones behind it; release grants in order', () => {
  const g = new Log();
  for (const s of ['a', 'big', 'small', 'x']) g.open(s);
  sem(g, 'a', 3);
  assert.deepEqual(sem(g, 'big', 3, 4, 5000), { ok: true, kind: 'sem_queued', name: 'S', sessionId: 'big', position: 1 });
  assert.deepEqual(sem(g, 'small', 1, 4, 5000), { ok: true, kind: 'sem_queued', name: 'S', sessionId: 'small', position: 2 }, 'it would fit, but waits behind the head');
  assert.deepEqual(g.fsm.getSemaphore('S').waiters.map((w) => [w.sessionId, w.permits, w.position]), [['big', 3, 1], ['small', 1, 2]]);
  const ev = g.run({ kind: 'semRelease', name: 'S', sessionId: 'a' }).events.filter((e) => e.type !== 'semReleased');
  assert.deepEqual(ev.map((e) => e.type === 'semGranted' && e.sessionId), ['big', 'small'], 'both fit now: granted together, in order');
  assertFsmInvariants(g.fsm);
});

test('resize: shrinking takes nothing away, new grants wait until in_use < limit; growing admits the head', () => {
  const g = new Log();
  for (const s of ['a', 'b', 'c']) g.open(s);
  sem(g, 'a', 2);
  sem(g, 'b', 2);
  assert.deepEqual(g.do({ kind: 'semSetLimit', name: 'S', limit: 2 }), { ok: true, kind: 'sem_limit', name: 'S', limit: 2 });
  assert.equal(g.fsm.getSemaphore('S').inUse, 4, 'nobody loses permits');
  assert.deepEqual(sem(g, 'c', 1, 2, 5000), { ok: true, kind: 'sem_queued', name: 'S', sessionId: 'c', position: 1 });
  g.do({ kind: 'semRelease', name: 'S', sessionId: 'a' });
  assert.equal(g.fsm.getSemaphore('S').waiters.length, 1, 'in_use 2 of 2: still full');
  const ev = g.run({ kind: 'semSetLimit', name: 'S', limit: 3 }).events;
  assert.deepEqual(ev.map((e) => e.type === 'semGranted' ? e.sessionId : e.type), ['semLimit', 'c'], 'the new limit, then the grants it admits');
  assertFsmInvariants(g.fsm);
});

test('session end and expiry release permits and waits; a wait timeout names its wait', () => {
  const g = new Log();
  for (const s of ['a', 'b', 'c']) g.open(s);
  sem(g, 'a', 4);
  sem(g, 'b', 2, 4, 5000);
  sem(g, 'c', 1, 4, 5000);
  const since = g.fsm.semWaitOf('S', 'b')!.since;
  assert.deepEqual(g.do({ kind: 'semCancelWait', name: 'S', sessionId: 'b', since: since + 1 }), { ok: true, kind: 'noop' }, 'a stale copy naming another wait does nothing');
  const out = g.run({ kind: 'semCancelWait', name: 'S', sessionId: 'b', since });
  assert.deepEqual(out.result, { ok: true, kind: 'wait_cancelled', name: 'S', sessionId: 'b' });
  assert.deepEqual(out.events, [{ type: 'semWaitEnded', name: 'S', sessionId: 'b', reason: 'cancelled' }]);
  const ex = g.run({ kind: 'expireSession', sessionId: 'a' });
  assert.ok(ex.events.some((e) => e.type === 'semGranted' && e.sessionId === 'c'));
  // c holds now: a late cancel reports the grant (the API's race)
  const late = g.do({ kind: 'semCancelWait', name: 'S', sessionId: 'c', since: 1 });
  assert.ok(late.ok && late.kind === 'sem_acquired');
  g.do({ kind: 'closeSession', sessionId: 'c' });
  assert.equal(g.fsm.counts().semaphores, 0);
  assertFsmInvariants(g.fsm);
});

test('the lessor times semaphore waits out with semCancelWait, apart from a lock wait of the same name', () => {
  const g = new Log();
  g.open('a');
  g.open('b');
  sem(g, 'a', 4);
  sem(g, 'b', 1, 4, 5000);
  const lessor = new Lessor({ tickMs: 100 });
  lessor.promote(0, g.fsm);
  const cmds = lessor.due(5000).filter((c) => c.kind !== 'expireSession');
  assert.deepEqual(cmds, [{ kind: 'semCancelWait', name: 'S', sessionId: 'b', since: g.fsm.semWaitOf('S', 'b')!.since }]);
  lessor.observe(g.run(cmds[0]!).events, 5000);
  assert.equal(lessor.counts().waits, 0);
});

test("idempotency: a queued semaphore acquire's key answers with its grant; snapshots restore; version 1 snapshots still restore", () => {
  const g = new Log();
  for (const s of ['a', 'b', 'c']) g.open(s);
  sem(g, 'a', 4);
  sem(g, 'b', 2, 4, 5000, 'kb');
  sem(g, 'c', 1, 4, 5000);
  const copy = LockFsm.fromSnapshot(g.fsm.snapshot(encode), decode);
  assertFsmInvariants(copy);
  assert.deepEqual(exportState(copy), exportState(g.fsm));
  const rel = { kind: 'semRelease', name: 'S', sessionId: 'a' } as const;
  assert.deepEqual(copy.apply(g.index + 1, { atMs: g.atMs, cmd: rel }), g.run(rel));
  assert.deepEqual(Buffer.from(copy.snapshot(encode)), Buffer.from(g.fsm.snapshot(encode)));
  const again = g.run({ kind: 'semAcquire', name: 'S', sessionId: 'b', limit: 4, permits: 2, waitMs: 5000 }, { key: 'kb' });
  assert.equal(again.replayed, true);
  assert.ok(again.result.ok && again.result.kind === 'sem_acquired' && again.result.permits === 2);
  // a version 1 snapshot (no shares, no semaphores) restores
  const v1 = new Log();
  v1.open('x');
  v1.token('L', 'x');
  const { sems: _s, elections: _e, ...rest } = exportState(v1.fsm);
  const old = { ...rest, v: 1, locks: rest.locks.map((l) => l.slice(0, 7)) };
  const restored = LockFsm.fromSnapshot(encode(old), decode);
  assertFsmInvariants(restored);
  assert.equal(restored.getLock('L').holder?.sessionId, 'x');
  assert.throws(() => LockFsm.fromSnapshot(encode({ ...old, sems: [] }), decode), /sems is not a field of version 1/);
  const bad = exportState(g.fsm);
  bad.sems![0]![2][0]![3] = bad.lastToken + 1;
  assert.throws(() => LockFsm.fromState(bad), /sems\[0\]\[2\]\[0\]\[3\] must be a fencing token/);
});

test("a release by a waiting session: semRelease is not_holder and keeps the wait; the semCancelWait naming it withdraws it and admits the next; if the grant won, it answers the grant", () => {
  // the two steps of the API's withdrawal (src/server/leader/leader-coordinator.ts withdrawWait, docs/api.md "Release")
  const g = new Log();
  for (const s of ['a', 'b', 'c']) g.open(s);
  sem(g, 'a', 2, 2);
  sem(g, 'b', 2, 2, 5000); // the head: blocks c's smaller request behind it
  sem(g, 'c', 1, 2, 5000);
  assert.deepEqual(g.do({ kind: 'semRelease', name: 'S', sessionId: 'b' }), { ok: false, code: 'not_holder' });
  const since = g.fsm.semWaitOf('S', 'b')!.since;
  g.do({ kind: 'semRelease', name: 'S', sessionId: 'a' }); // a frees 2: b is granted
  assert.equal(g.fsm.semWaitOf('S', 'b'), undefined);
  const won = g.do({ kind: 'semCancelWait', name: 'S', sessionId: 'b', since });
  assert.ok(won.ok && won.kind === 'sem_acquired' && won.sessionId === 'b', 'the grant won the race: the cancel reports it');
  assert.deepEqual(g.do({ kind: 'semRelease', name: 'S', sessionId: 'b' }), { ok: true, kind: 'sem_released', name: 'S' });
  assert.deepEqual(g.fsm.getSemaphore('S').holders.map((h) => h.sessionId), ['c'], 'c was granted once b gave the permits back');
  // a waiting head withdrawn admits the request behind it at once
  sem(g, 'a', 2, 2, 5000);
  sem(g, 'b', 1, 2, 5000);
  const out = g.run({ kind: 'semCancelWait', name: 'S', sessionId: 'a', since: g.fsm.semWaitOf('S', 'a')!.since });
  assert.deepEqual(out.events.map((e) => e.type), ['semWaitEnded', 'semGranted']);
  assert.deepEqual(g.fsm.getSemaphore('S').holders.map((h) => h.sessionId), ['c', 'b']);
  assertFsmInvariants(g.fsm);
});

test('listSemaphores: semaphores with holders or waiters, by prefix, sorted by name, limited; each entry is getSemaphore', () => {
  const g = new Log();
  for (const s of ['a', 'b']) g.open(s);
  for (const n of ['pool/b', 'pool/a', 'other', 'pool']) g.do({ kind: 'semAcquire', name: n, sessionId: 'a', limit: 1, permits: 1, waitMs: 0 });
  g.do({ kind: 'semAcquire', name: 'pool/b', sessionId: 'b', limit: 1, permits: 1, waitMs: 5000 });
  g.do({ kind: 'semAcquire', name: 'gone', sessionId: 'b', limit: 1, permits: 1, waitMs: 0 });
  g.do({ kind: 'semRelease', name: 'gone', sessionId: 'b' });
  assert.deepEqual(g.fsm.listSemaphores('', 100).map((s) => s.name), ['other', 'pool', 'pool/a', 'pool/b'], 'an idle semaphore is not listed');
  assert.deepEqual(g.fsm.listSemaphores('pool/', 10).map((s) => s.name), ['pool/a', 'pool/b']);
  assert.deepEqual(g.fsm.listSemaphores('pool', 2).map((s) => s.name), ['pool', 'pool/a']);
  assert.deepEqual(g.fsm.listSemaphores('x', 10), []);
  assert.deepEqual(g.fsm.listSemaphores('', 0), []);
  assert.deepEqual(g.fsm.listSemaphores('pool/b', 1), [g.fsm.getSemaphore('pool/b')]);
  assert.deepEqual(g.fsm.listSemaphores('pool/b', 1)[0]?.waiters.map((w) => [w.sessionId, w.position]), [['b', 1]]);
});
