// Unit tests for every contract rule of the lock FSM (api.md §3, docs/lock-fsm.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockFsm, assertFsmInvariants } from '../../src/lock-fsm/index.js';
import { Log, decode, encode } from './helpers.js';

test('sessions: open, inspect, close; duplicate id and unknown id are values, not exceptions', () => {
  const g = new Log();
  const out = g.run({ kind: 'openSession', sessionId: 's1', ttlMs: 5000, owner: 'alice', lockDelayMs: 0 });
  assert.deepEqual(out.result, { ok: true, kind: 'session_opened', sessionId: 's1', ttlMs: 5000 });
  assert.deepEqual(out.events, [{ type: 'sessionOpened', sessionId: 's1', ttlMs: 5000 }]);
  assert.deepEqual(g.do({ kind: 'openSession', sessionId: 's1', ttlMs: 1, owner: '', lockDelayMs: 0 }), { ok: false, code: 'session_exists' });
  assert.deepEqual(g.fsm.getSession('s1'), { sessionId: 's1', owner: 'alice', ttlMs: 5000, lockDelayMs: 0, locks: [], waiting: [] });
  assert.deepEqual(g.do({ kind: 'closeSession', sessionId: 's1' }), { ok: true, kind: 'session_closed', sessionId: 's1', released: [] });
  assert.equal(g.fsm.getSession('s1'), undefined);
  assert.deepEqual(g.do({ kind: 'closeSession', sessionId: 's1' }), { ok: false, code: 'session_not_found' });
  assert.deepEqual(g.acquire('a', 'nope'), { ok: false, code: 'session_not_found' });
  assert.deepEqual(g.do({ kind: 'release', name: 'a', sessionId: 'nope' }), { ok: false, code: 'session_not_found' });
});

test('fencing token = max(index, lastToken + 1); re-acquire by the holder returns the same token', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  const out = g.run({ kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 0 }, { index: 100 });
  assert.deepEqual(out.result, { ok: true, kind: 'acquired', name: 'a', sessionId: 's1', fencingToken: 100, ttlMs: 10_000 });
  assert.deepEqual(out.events, [{ type: 'granted', name: 'a', sessionId: 's1', fencingToken: 100 }]);
  const again = g.run({ kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 5000 });
  assert.deepEqual(again.result, { ok: true, kind: 'acquired', name: 'a', sessionId: 's1', fencingToken: 100, ttlMs: 10_000 });
  assert.deepEqual(again.events, [], 're-acquire is not a new grant');
  assert.equal(g.token('b', 's2'), 102);
  assert.equal(g.fsm.lastToken, 102);
});

test('wait_ms 0 on a held lock: lock_held with the holder at once; owner label per acquire', () => {
  const g = new Log();
  g.open('s1', { owner: 'sess-owner' });
  g.open('s2');
  assert.equal(g.acquire('a', 's1', 0, 'job-42').ok, true);
  const r = g.acquire('a', 's2');
  assert.deepEqual(r, { ok: false, code: 'lock_held', holder: { sessionId: 's1', owner: 'job-42', fencingToken: 3 } });
  assert.deepEqual(g.fsm.getLock('a'), { name: 'a', held: true, holder: { sessionId: 's1', owner: 'job-42', fencingToken: 3 }, waiters: 0, inDelay: false, mode: 'exclusive', holders: [{ sessionId: 's1', owner: 'job-42', fencingToken: 3, mode: 'exclusive' }] });
  g.token('b', 's1');
  assert.equal(g.fsm.getLock('b').holder?.owner, 'sess-owner', 'defaults to the session owner');
});

test('FIFO waiters: queued positions, a repeated acquire keeps its place, release hands over in the same apply', () => {
  const g = new Log();
  for (const s of ['s1', 's2', 's3', 's4']) g.open(s);
  const t1 = g.token('a', 's1');
  assert.deepEqual(g.acquire('a', 's2', 1000), { ok: true, kind: 'queued', name: 'a', sessionId: 's2', position: 1 });
  assert.deepEqual(g.acquire('a', 's3', 1000), { ok: true, kind: 'queued', name: 'a', sessionId: 's3', position: 2 });
  assert.deepEqual(g.acquire('a', 's4', 1000), { ok: true, kind: 'queued', name: 'a', sessionId: 's4', position: 3 });
  assert.deepEqual(g.acquire('a', 's3', 9000), { ok: true, kind: 'queued', name: 'a', sessionId: 's3', position: 2 }, 'keeps its place');
  assert.equal(g.acquire('a', 's3', 0).ok, false, 'wait 0 while queued: lock_held…');
  assert.equal(g.fsm.getLock('a').waiters, 3, '…and the earlier wait stays queued');
  const out = g.run({ kind: 'release', name: 'a', sessionId: 's1', fencingToken: t1 });
  assert.deepEqual(out.result, { ok: true, kind: 'released', name: 'a' });
  assert.equal(out.events.length, 2);
  assert.deepEqual(out.events[0], { type: 'released', name: 'a', sessionId: 's1', fencingToken: t1, reason: 'released' }, 'the release comes before the grant it lets through');
  const ev = out.events[1];
  assert.ok(ev?.type === 'granted' && ev.sessionId === 's2' && ev.fencingToken === g.index && ev.fencingToken > t1);
  assert.equal(g.fsm.getLock('a').holder?.sessionId, 's2');
  g.do({ kind: 'release', name: 'a', sessionId: 's2' });
  assert.equal(g.fsm.getLock('a').holder?.sessionId, 's3');
  g.do({ kind: 'release', name: 'a', sessionId: 's3' });
  assert.equal(g.fsm.getLock('a').holder?.sessionId, 's4');
  g.do({ kind: 'release', name: 'a', sessionId: 's4' });
  assert.deepEqual(g.fsm.getLock('a'), { name: 'a', held: false, waiters: 0, inDelay: false });
  assert.equal(g.fsm.counts().heldLocks, 0);
  assertFsmInvariants(g.fsm);
});

test('release by a non-holder or with a stale fencing token is not_holder and changes nothing', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  const t = g.token('a', 's1');
  assert.deepEqual(g.do({ kind: 'release', name: 'a', sessionId: 's2' }), { ok: false, code: 'not_holder' });
  assert.deepEqual(g.do({ kind: 'release', name: 'a', sessionId: 's1', fencingToken: t - 1 }), { ok: false, code: 'not_holder' });
  assert.deepEqual(g.do({ kind: 'release', name: 'zzz', sessionId: 's1' }), { ok: false, code: 'not_holder' });
  assert.equal(g.fsm.check('a', t), true);
  assert.equal(g.do({ kind: 'release', name: 'a', sessionId: 's1', fencingToken: t }).ok, true);
  assert.equal(g.fsm.check('a', t), false);
});

test('a session end hands every lock to its next waiter with distinct, increasing tokens (sorted name order)', () => {
  const g = new Log();
  for (const s of ['s1', 's2', 's3']) g.open(s);
  g.token('b', 's1');
  g.token('a', 's1');
  g.acquire('a', 's2', 1000);
  g.acquire('b', 's3', 1000);
  const out = g.run({ kind: 'closeSession', sessionId: 's1' });
  assert.deepEqual(out.result, { ok: true, kind: 'session_closed', sessionId: 's1', released: ['a', 'b'] });
  assert.deepEqual(out.events, [
    { type: 'released', name: 'a', sessionId: 's1', fencingToken: 5, reason: 'closed' },
    { type: 'granted', name: 'a', sessionId: 's2', fencingToken: g.index },
    { type: 'released', name: 'b', sessionId: 's1', fencingToken: 4, reason: 'closed' },
    { type: 'granted', name: 'b', sessionId: 's3', fencingToken: g.index + 1 },
    { type: 'sessionEnded', sessionId: 's1', reason: 'closed', released: ['a', 'b'] },
  ]);
  assert.equal(g.fsm.lastToken, g.index + 1);
  // the next entry's index equals lastToken: the token still moves past it
  assert.equal(g.token('c', 's3'), g.index + 1);
  assertFsmInvariants(g.fsm);
});

test('a waiter whose session ends leaves the queue; the others keep their order', () => {
  const g = new Log();
  for (const s of ['s1', 's2', 's3', 's4']) g.open(s);
  g.token('a', 's1');
  g.acquire('a', 's2', 1000);
  g.acquire('a', 's3', 1000);
  g.acquire('a', 's4', 1000);
  const out = g.run({ kind: 'expireSession', sessionId: 's3' });
  assert.deepEqual(out.events, [
    { type: 'waitEnded', name: 'a', sessionId: 's3', reason: 'session_ended' },
    { type: 'sessionEnded', sessionId: 's3', reason: 'expired', released: [] },
  ]);
  assert.deepEqual(g.acquire('a', 's4', 1000), { ok: true, kind: 'queued', name: 'a', sessionId: 's4', position: 2 });
  g.do({ kind: 'closeSession', sessionId: 's1' });
  assert.equal(g.fsm.getLock('a').holder?.sessionId, 's2');
  assertFsmInvariants(g.fsm);
});

test('lock-delay: a lock freed by expiry stays unavailable until endLockDelay, then goes to the next waiter', () => {
  const g = new Log();
  g.open('s1', { lockDelayMs: 15_000 });
  g.open('s2');
  g.open('s3');
  g.token('a', 's1');
  const out = g.run({ kind: 'expireSession', sessionId: 's1' });
  const since = g.index;
  assert.deepEqual(out.result, { ok: true, kind: 'session_closed', sessionId: 's1', released: ['a'] });
  assert.deepEqual(out.events, [
    { type: 'released', name: 'a', sessionId: 's1', fencingToken: 4, reason: 'expired' },
    { type: 'lockDelayStarted', name: 'a', delayMs: 15_000, since },
    { type: 'sessionEnded', sessionId: 's1', reason: 'expired', released: ['a'] },
  ]);
  assert.deepEqual(g.fsm.getLock('a'), { name: 'a', held: false, waiters: 0, inDelay: true });
  assert.deepEqual(g.acquire('a', 's2'), { ok: false, code: 'lock_held' }, 'no holder to report');
  assert.deepEqual(g.acquire('a', 's2', 5000), { ok: true, kind: 'queued', name: 'a', sessionId: 's2', position: 1 });
  assert.deepEqual(g.acquire('a', 's3', 5000), { ok: true, kind: 'queued', name: 'a', sessionId: 's3', position: 2 });
  assert.deepEqual(g.fsm.locksInDelay(), [{ name: 'a', delayMs: 15_000, since }]);
  assert.equal(g.fsm.listLocks('', 10).length, 0, 'a lock in delay is not held');
  const end = g.run({ kind: 'endLockDelay', name: 'a' });
  assert.deepEqual(end.result, { ok: true, kind: 'noop' });
  assert.deepEqual(end.events, [{ type: 'lockDelayEnded', name: 'a' }, { type: 'granted', name: 'a', sessionId: 's2', fencingToken: g.index }]);
  assert.deepEqual(g.run({ kind: 'endLockDelay', name: 'a' }).events, [], 'a repeated endLockDelay is a no-op');
  assert.deepEqual(g.fsm.locksInDelay(), []);
  assertFsmInvariants(g.fsm);
});

test('lock-delay applies only to expiry: close and release free the lock at once; a delayed lock with no waiter disappears', () => {
  const g = new Log();
  g.open('s1', { lockDelayMs: 15_000 });
  g.open('s2');
  g.token('a', 's1');
  g.token('b', 's1');
  g.do({ kind: 'release', name: 'b', sessionId: 's1' });
  assert.equal(g.acquire('b', 's2').ok, true);
  g.do({ kind: 'closeSession', sessionId: 's1' });
  assert.equal(g.acquire('a', 's2').ok, true);
  g.open('s3', { lockDelayMs: 1 });
  g.token('c', 's3');
  g.do({ kind: 'expireSession', sessionId: 's3' });
  assert.equal(g.fsm.getLock('c').inDelay, true);
  g.do({ kind: 'endLockDelay', name: 'c' });
  assert.deepEqual(g.fsm.getLock('c'), { name: 'c', held: false, waiters: 0, inDelay: false });
  assert.equal(g.fsm.core.locks.has('c'), false, 'no state kept for a free lock');
});

test('expiring an unknown session is a no-op, and so is a repeat', () => {
  const g = new Log();
  g.open('s1');
  g.token('a', 's1');
  assert.deepEqual(g.run({ kind: 'expireSession', sessionId: 'ghost' }), { result: { ok: true, kind: 'noop' }, events: [] });
  assert.equal(g.do({ kind: 'expireSession', sessionId: 's1' }).ok, true);
  assert.deepEqual(g.run({ kind: 'expireSession', sessionId: 's1' }), { result: { ok: true, kind: 'noop' }, events: [] });
});

test('cancelWait: leaves the queue; after a grant it reports the grant; otherwise a no-op', () => {
  const g = new Log();
  for (const s of ['s1', 's2', 's3']) g.open(s);
  g.token('a', 's1');
  g.acquire('a', 's2', 1000);
  g.acquire('a', 's3', 1000);
  const out = g.run({ kind: 'cancelWait', name: 'a', sessionId: 's2' });
  assert.deepEqual(out, { result: { ok: true, kind: 'wait_cancelled', name: 'a', sessionId: 's2' }, events: [{ type: 'waitEnded', name: 'a', sessionId: 's2', reason: 'cancelled' }] });
  assert.deepEqual(g.do({ kind: 'cancelWait', name: 'a', sessionId: 's2' }), { ok: true, kind: 'noop' });
  g.do({ kind: 'release', name: 'a', sessionId: 's1' });
  const r = g.do({ kind: 'cancelWait', name: 'a', sessionId: 's3' });
  assert.ok(r.ok && r.kind === 'acquired' && r.sessionId === 's3', 'the grant won the race: the proposer learns it holds the lock');
  assert.deepEqual(g.do({ kind: 'cancelWait', name: 'a', sessionId: 'ghost' }), { ok: false, code: 'session_not_found' });
  assertFsmInvariants(g.fsm);
});

test('acquire with newSession opens the session and acquires in one entry, or creates nothing', () => {
  const g = new Log();
  const ns = { ttlMs: 7000, owner: 'cli', lockDelayMs: 0 };
  const out = g.run({ kind: 'acquire', name: 'a', sessionId: 'n1', waitMs: 0, newSession: ns });
  assert.deepEqual(out.result, { ok: true, kind: 'acquired', name: 'a', sessionId: 'n1', fencingToken: 1, ttlMs: 7000 });
  assert.deepEqual(out.events, [{ type: 'sessionOpened', sessionId: 'n1', ttlMs: 7000 }, { type: 'granted', name: 'a', sessionId: 'n1', fencingToken: 1 }]);
  assert.equal(g.fsm.getLock('a').holder?.owner, 'cli');
  const held = g.run({ kind: 'acquire', name: 'a', sessionId: 'n2', waitMs: 0, newSession: ns });
  assert.equal(held.result.ok, false);
  assert.deepEqual(held.events, []);
  assert.equal(g.fsm.getSession('n2'), undefined, 'a failed acquire leaves no orphan session');
  const q = g.run({ kind: 'acquire', name: 'a', sessionId: 'n3', waitMs: 1000, newSession: ns });
  assert.deepEqual(q.result, { ok: true, kind: 'queued', name: 'a', sessionId: 'n3', position: 1 });
  assert.ok(g.fsm.getSession('n3'));
  assert.deepEqual(g.do({ kind: 'acquire', name: 'b', sessionId: 'n1', waitMs: 0, newSession: ns }), { ok: false, code: 'session_exists' });
});

test('limits: too_many_requests for sessions and waiters; the refusal is not remembered by idempotency', () => {
  const g = new Log({ maxSessions: 3, maxWaitersPerLock: 1 });
  g.open('s1');
  g.open('s2');
  g.open('s3');
  const open4 = { kind: 'openSession', sessionId: 's4', ttlMs: 1000, owner: '', lockDelayMs: 0 } as const;
  assert.deepEqual(g.do(open4, { key: 'k' }), { ok: false, code: 'too_many_requests', limit: 'sessions' });
  assert.deepEqual(g.do({ kind: 'acquire', name: 'x', sessionId: 's9', waitMs: 0, newSession: { ttlMs: 1000, owner: '', lockDelayMs: 0 } }), { ok: false, code: 'too_many_requests', limit: 'sessions' });
  g.token('a', 's1');
  assert.equal(g.acquire('a', 's2', 1000).ok, true);
  assert.deepEqual(g.acquire('a', 's3', 1000), { ok: false, code: 'too_many_requests', limit: 'waiters' });
  assert.deepEqual(g.acquire('a', 's3', 0).ok, false, 'wait 0 is lock_held, not a waiter');
  g.do({ kind: 'closeSession', sessionId: 's2' }); // frees a session slot and the waiter slot
  assert.equal(g.do(open4, { key: 'k' }).ok, true, 'retry with the same key now succeeds');
  assert.equal(g.acquire('a', 's3', 1000).ok, true, 'the waiter slot is reusable');
  assertFsmInvariants(g.fsm);
});

test('idempotency: a retry returns the first result and changes nothing, across snapshot and restore', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  const first = g.run({ kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 0 }, { key: 'req-1' });
  const tok = g.fsm.lastToken;
  g.do({ kind: 'release', name: 'a', sessionId: 's1' });
  g.token('a', 's2');
  const retry = g.run({ kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 0 }, { key: 'req-1' });
  assert.deepEqual(retry, { result: first.result, events: [], replayed: true });
  assert.equal(g.fsm.getLock('a').holder?.sessionId, 's2', 'nothing changed');
  const copy = LockFsm.fromSnapshot(g.fsm.snapshot(encode), decode);
  const same = copy.apply(g.index + 1, { atMs: g.atMs, idempotencyKey: 'req-1', cmd: { kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 0 } });
  assert.deepEqual(same.result, { ok: true, kind: 'acquired', name: 'a', sessionId: 's1', fencingToken: tok, ttlMs: 10_000 }, 'the restored key still answers its retry');
  // the same key with another command is not a retry: refused, and nothing runs
  const other = copy.apply(g.index + 2, { atMs: g.atMs, idempotencyKey: 'req-1', cmd: { kind: 'closeSession', sessionId: 's2' } });
  assert.deepEqual(other, { result: { ok: false, code: 'idempotency_key_reused', differs: 'operation' }, events: [] });
  assert.ok(copy.getSession('s2'), 'the other command did not run');
  assert.throws(() => { (retry.result as { ok: boolean }).ok = false; }, TypeError, 'stored results are frozen');
});

test('idempotency keys age out by log time at exactly idempotencyTtlMs; a lagging leader clock cannot revive them', () => {
  const ttl = 600_000;
  const g = new Log({ idempotencyTtlMs: ttl });
  const t0 = g.atMs;
  g.do({ kind: 'openSession', sessionId: 's1', ttlMs: 1000, owner: '', lockDelayMs: 0 }, { key: 'k1' });
  g.do({ kind: 'barrier', term: 1 }, { atMs: t0 + ttl - 1 });
  assert.equal(g.fsm.core.idem.size, 1, 'still remembered just before the TTL');
  g.do({ kind: 'barrier', term: 1 }, { atMs: t0 + ttl });
  assert.equal(g.fsm.core.idem.size, 0, 'evicted at the TTL');
  g.do({ kind: 'barrier', term: 2 }, { atMs: t0 }); // a new leader with a slow clock
  assert.equal(g.fsm.core.idem.nowMs, t0 + ttl, 'log time never goes back');
  g.do({ kind: 'openSession', sessionId: 's2', ttlMs: 1000, owner: '', lockDelayMs: 0 }, { key: 'k2', atMs: t0 });
  assert.deepEqual([...g.fsm.core.idem.entries()].map((e) => [e.key, e.atMs]), [['k2', t0 + ttl]], 'recorded at log time');
});

test('idempotency table is bounded: past idempotencyMaxKeys the oldest key goes first', () => {
  const g = new Log({ idempotencyMaxKeys: 3 });
  for (let i = 0; i < 5; i++) g.do({ kind: 'barrier', term: i }, { key: `k${i}` });
  assert.deepEqual([...g.fsm.core.idem.entries()].map((e) => e.key), ['k2', 'k3', 'k4']);
  assert.throws(() => new LockFsm({ idempotencyTtlMs: 599_999 }), /600000/);
});

test('check(name, token) is true only for the current grant', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  const t1 = g.token('a', 's1');
  assert.equal(g.fsm.check('a', t1), true);
  assert.equal(g.fsm.check('a', t1 + 1), false);
  assert.equal(g.fsm.check('b', t1), false);
  g.do({ kind: 'closeSession', sessionId: 's1' });
  const t2 = g.token('a', 's2');
  assert.equal(g.fsm.check('a', t1), false);
  assert.equal(g.fsm.check('a', t2), true);
});

test('listLocks: held locks only, by prefix, sorted by name, limited; counts for metrics', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2', { lockDelayMs: 1000 });
  for (const n of ['jobs/b', 'jobs/a', 'other', 'jobs/c', 'jobs']) g.token(n, 's1');
  g.token('jobs/d', 's2');
  g.do({ kind: 'expireSession', sessionId: 's2' });
  g.open('s3');
  g.acquire('jobs/a', 's3', 1000);
  assert.deepEqual(g.fsm.listLocks('jobs/', 10).map((l) => l.name), ['jobs/a', 'jobs/b', 'jobs/c']);
  assert.deepEqual(g.fsm.listLocks('jobs/', 2).map((l) => l.name), ['jobs/a', 'jobs/b']);
  assert.deepEqual(g.fsm.listLocks('', 100).map((l) => l.name), ['jobs', 'jobs/a', 'jobs/b', 'jobs/c', 'other']);
  assert.deepEqual(g.fsm.listLocks('x', 10), []);
  assert.equal(g.fsm.listLocks('jobs/a', 1)[0]?.waiters, 1);
  assert.deepEqual(g.fsm.counts(), { sessions: 2, heldLocks: 5, waiters: 1, locksInDelay: 1, semaphores: 0, semaphoresInUse: 0, semaphoreWaiters: 0, electionLeaders: 0 });
  assert.deepEqual([...g.fsm.waits()], [{ name: 'jobs/a', sessionId: 's3', waitMs: 1000, since: g.index, queuedAtMs: g.atMs }]);
  assert.deepEqual([...g.fsm.sessions()].map((s) => s.sessionId).sort(), ['s1', 's3']);
});

test('apply indexes must grow: a replayed or reordered entry is a bug and fails loudly', () => {
  const g = new Log();
  g.do({ kind: 'barrier', term: 1 }, { index: 5 });
  assert.equal(g.fsm.lastAppliedIndex, 5);
  assert.throws(() => g.fsm.apply(5, { atMs: 0, cmd: { kind: 'barrier', term: 1 } }), /invariant/);
  assert.throws(() => g.fsm.apply(4, { atMs: 0, cmd: { kind: 'barrier', term: 1 } }), /invariant/);
});

test('removing waiters from the middle of a long queue is O(1) each', () => {
  const n = 20_000;
  const g = new Log({ maxWaitersPerLock: n, maxSessions: n + 1 });
  g.open('h');
  g.token('a', 'h');
  for (let i = 0; i < n; i++) {
    g.open(`w${i}`);
    g.acquire('a', `w${i}`, 1000);
  }
  const start = process.hrtime.bigint();
  for (let i = 1; i < n; i += 2) g.do({ kind: 'cancelWait', name: 'a', sessionId: `w${i}` }); // every other one
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  assert.ok(ms < 2000, `cancelling ${n / 2} waiters took ${ms} ms`);
  assert.equal(g.fsm.getLock('a').waiters, n / 2);
  g.do({ kind: 'release', name: 'a', sessionId: 'h' });
  assert.equal(g.fsm.getLock('a').holder?.sessionId, 'w0');
  g.do({ kind: 'closeSession', sessionId: 'w0' });
  assert.equal(g.fsm.getLock('a').holder?.sessionId, 'w2');
  assertFsmInvariants(g.fsm);
});

test('sessionGrants: every grant of a session by kind and token (locks, shares, elections, then semaphores, each by name); revoked grants are gone', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  const tz = g.token('z', 's1');
  const ta = g.token('a', 's1');
  const share = g.run({ kind: 'acquire', name: 'r', sessionId: 's1', waitMs: 0, mode: 'shared' }).result;
  assert.ok(share.ok && share.kind === 'acquired');
  const el = g.run({ kind: 'campaign', name: 'e', sessionId: 's1', value: 'v', waitMs: 0 }).result;
  assert.ok(el.ok && el.kind === 'acquired');
  const sem = g.run({ kind: 'semAcquire', name: 'p', sessionId: 's1', limit: 3, permits: 2, waitMs: 0 }).result;
  assert.ok(sem.ok && sem.kind === 'sem_acquired');
  g.token('other', 's2');
  // waiters (docs/contract.md §5 "Contention"): s2 waits on z and on p
  assert.equal(g.acquire('z', 's2', 1000).ok, true);
  assert.equal(g.do({ kind: 'semAcquire', name: 'p', sessionId: 's2', limit: 3, permits: 2, waitMs: 1000 }).ok, true);
  assert.deepEqual(g.fsm.sessionGrants('s1'), [
    { kind: 'lock', name: 'a', fencingToken: ta, waiters: 0 },
    { kind: 'election', name: 'e', fencingToken: el.fencingToken, waiters: 0 },
    { kind: 'lock', name: 'r', fencingToken: share.fencingToken, shared: true, waiters: 0 },
    { kind: 'lock', name: 'z', fencingToken: tz, waiters: 1 },
    { kind: 'semaphore', name: 'p', fencingToken: sem.fencingToken, waiters: 1 },
  ]);
  assert.ok(g.do({ kind: 'revoke', target: 'lock', name: 'a', sessionId: 's1' }).ok);
  assert.ok(g.do({ kind: 'revoke', target: 'semaphore', name: 'p' }).ok);
  assert.deepEqual(g.fsm.sessionGrants('s1').map((x) => x.name), ['e', 'r', 'z']);
  assert.deepEqual(g.fsm.sessionGrants('nope'), []);
});
