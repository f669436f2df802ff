// Snapshots: canonical bytes, faithful restore, and clear errors for corrupt input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockFsm, assertFsmInvariants, exportState, importState, type StateV1 } from '../../src/lock-fsm/index.js';
import { Log, decode, encode } from './helpers.js';

/** a state with everything in it: holders, waiters, a lock-delay, idempotency keys */
function busy(): Log {
  const g = new Log();
  g.open('s1', { lockDelayMs: 4000 });
  g.open('s2', { owner: 'zoë' });
  g.open('s3');
  g.token('a', 's1');
  g.token('b', 's1');
  g.acquire('b', 's2', 1000, 'job-7');
  g.acquire('b', 's3', 2000);
  g.token('c', 's2');
  g.acquire('c', 's3', 3000);
  g.do({ kind: 'expireSession', sessionId: 's1' }, { key: 'exp-1' }); // a and b into lock-delay
  g.do({ kind: 'acquire', name: 'a', sessionId: 's3', waitMs: 5000 }, { key: 'acq-1' });
  return g;
}

test('restore reproduces holders, waiters, lock-delays, lastToken and the idempotency table', () => {
  const g = busy();
  const copy = LockFsm.fromSnapshot(g.fsm.snapshot(encode), decode);
  assertFsmInvariants(copy);
  assert.deepEqual(exportState(copy), exportState(g.fsm));
  assert.equal(copy.lastToken, g.fsm.lastToken);
  assert.equal(copy.lastAppliedIndex, g.fsm.lastAppliedIndex);
  assert.deepEqual(copy.locksInDelay().map((d) => [d.name, d.delayMs]), [['a', 4000], ['b', 4000]]);
  assert.deepEqual(copy.locksInDelay(), g.fsm.locksInDelay(), 'with the index that began each delay');
  assert.deepEqual([...copy.waits()], [...g.fsm.waits()], 'and each wait');
  // both replicas keep behaving identically
  const cmds = [
    { kind: 'endLockDelay', name: 'b' },
    { kind: 'endLockDelay', name: 'a' },
    { kind: 'closeSession', sessionId: 's2' },
  ] as const;
  for (const cmd of cmds) {
    const i = g.index + 1;
    assert.deepEqual(copy.apply(i, { atMs: g.atMs, cmd }), g.run(cmd, { index: i }));
  }
  assert.equal(copy.getLock('b').holder?.sessionId, 's3', 'the waiters survived the restore in order');
  // acq-1 queued s3 for a; endLockDelay a granted it, so its key now answers with the grant
  const tok = copy.getLock('a').holder?.fencingToken;
  assert.equal(copy.getLock('a').holder?.sessionId, 's3');
  assert.deepEqual(copy.apply(g.index + 1, { atMs: g.atMs, idempotencyKey: 'acq-1', cmd: { kind: 'acquire', name: 'a', sessionId: 's3', waitMs: 5000 } }).result,
    { ok: true, kind: 'acquired', name: 'a', sessionId: 's3', fencingToken: tok, ttlMs: 10_000 }, 'idempotency table restored, and settled by the grant');
});

test('equal states encode to identical bytes whatever the history', () => {
  const a = new Log();
  a.open('s1');
  a.open('s2');
  a.do({ kind: 'acquire', name: 'x', sessionId: 's1', waitMs: 0 }, { index: 10 });
  a.do({ kind: 'acquire', name: 'y', sessionId: 's2', waitMs: 0 }, { index: 11 });
  a.do({ kind: 'barrier', term: 3 }, { index: 20, atMs: a.atMs + 600_000 });
  // b: other session and lock insertion orders, a lock and a session that came and went,
  // an idempotency key that has aged out since
  const b = new Log();
  b.do({ kind: 'openSession', sessionId: 's9', ttlMs: 5, owner: '', lockDelayMs: 0 }, { key: 'old' });
  b.open('s2');
  b.open('s1');
  b.token('zz', 's9');
  b.acquire('x', 's9', 1000);
  b.do({ kind: 'closeSession', sessionId: 's9' });
  b.do({ kind: 'acquire', name: 'x', sessionId: 's1', waitMs: 0 }, { index: 10 });
  b.do({ kind: 'acquire', name: 'y', sessionId: 's2', waitMs: 0 }, { index: 11 });
  b.do({ kind: 'barrier', term: 3 }, { index: 20, atMs: a.atMs });
  assert.deepEqual(exportState(a.fsm), exportState(b.fsm));
  assert.deepEqual(Buffer.from(a.fsm.snapshot(encode)), Buffer.from(b.fsm.snapshot(encode)));
});

function corrupt(mut: (s: StateV1) => void): () => void {
  const s = structuredClone(exportState(busy().fsm));
  mut(s);
  return () => importState(s);
}

test('a corrupt snapshot gives a clear error naming the field', () => {
  const cases: [(s: StateV1) => void, RegExp][] = [
    [(s) => { s.v = 7; }, /^Error: corrupt lock-fsm snapshot: v must be one of 1, 2, 3, 4, 5, 6/],
    [(s) => { s.format = 'etcd'; }, /format/],
    [(s) => { (s as unknown as Record<string, unknown>)['extra'] = 1; }, /extra is not a known field/],
    [(s) => { s.lastToken = -1; }, /lastToken/],
    [(s) => { s.sessions.reverse(); }, /sessions\[1\]\[0\] is out of order/],
    [(s) => { s.sessions.push([...s.sessions[0]!]); }, /out of order or duplicated/],
    [(s) => { s.sessions[0]![1] = 0; }, /sessions\[0\]\[1\]/],
    [(s) => { s.sessions[0]![2] = 5 as unknown as string; }, /sessions\[0\]\[2\]/],
    [(s) => { s.sessions.splice(1, 1); }, /names session s3, which is not in sessions/],
    [(s) => { s.locks.reverse(); }, /locks\[1\]\[0\] is out of order/],
    [(s) => { s.locks[2]![3] = 999; }, /fencing token in \[1, lastToken/],
    [(s) => { s.locks[0]![4] = 0; }, /locks\[0\]\[4\] must be a lock-delay/],
    [(s) => { s.locks[2]![4] = 5; }, /a held lock is not in lock-delay/],
    [(s) => { s.locks[1]![5].push(['s3', '', 1]); }, /waits twice/],
    [(s) => { s.locks.push(['d', 's3', '', s.locks[2]![3], 0, [], 0, []]); }, /hold fencing token 8 twice/],
    [(s) => { s.locks[2]![5].unshift(['s2', '', 1]); }, /both holds and waits/],
    [(s) => { s.locks[1]![5][0]![2] = 0; }, /a wait in ms/],
    [(s) => { s.locks[1]!.pop(); s.locks[1]!.pop(); }, /locks\[1\] must be an array of 8/],
    [(s) => { s.idem.entries[1]![1] = s.idem.entries[0]![1] - 1; }, /entries are oldest first/],
    [(s) => { s.idem.entries[0]![2] = { ok: true, kind: 'bogus' } as never; }, /idem\.entries\[0\]\[2\]\.kind is unknown/],
    [(s) => { s.idem.entries[1]![0] = s.idem.entries[0]![0]; }, /repeats a key/],
    [(s) => { s.idem.nowMs = 0; }, /idem\.entries\[0\]\[1\]/],
    [(s) => { s.idem.entries[0]!.pop(); }, /idem\.entries\[0\] must be an array of 4 elements/],
    [(s) => { (s.idem.entries[0]![3] as unknown[])[0] = 'no such kind!'; }, /idem\.entries\[0\]\[3\]\[0\] must be a command kind/],
    [(s) => { (s.idem.entries[0]![3] as unknown[])[1] = 'bad name'; }, /idem\.entries\[0\]\[3\]\[1\]/],
    [(s) => { (s.idem.entries[0]![3] as unknown[])[2] = 'white space'; }, /idem\.entries\[0\]\[3\]\[2\] must be a principal/],
    [(s) => { (s.idem.entries[0]![3] as unknown[])[3] = 'XYZ'; }, /idem\.entries\[0\]\[3\]\[3\] must be a request digest/],
    [(s) => { (s.idem.entries[0]![3] as unknown[]).pop(); }, /idem\.entries\[0\]\[3\] must be an array of 4 elements/],
  ];
  for (const [mut, re] of cases) assert.throws(corrupt(mut), re);
  assert.throws(() => importState(null), /root must be an object/);
  assert.throws(() => importState([1, 2]), /root must be an object/);
});

test('restore of a corrupt snapshot leaves the current state untouched', () => {
  const g = busy();
  const before = exportState(g.fsm);
  const bad = structuredClone(before);
  bad.locks[0]![1] = 'ghost';
  assert.throws(() => g.fsm.restore(encode(bad), decode), /ghost/);
  assert.deepEqual(exportState(g.fsm), before);
  assert.throws(() => g.fsm.restore(new Uint8Array([0xc1]), decode));
  assert.deepEqual(exportState(g.fsm), before);
});

test('version 5 keeps the log time each wait was queued at (lock, campaign and semaphore waits); older snapshots count their waits as queued at the snapshot', () => {
  const g = new Log();
  g.open('a');
  g.open('b');
  g.open('c');
  g.token('L', 'a');
  g.acquire('L', 'b', 5000); // queued at log time t0
  g.do({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 0 });
  g.do({ kind: 'campaign', name: 'E', sessionId: 'c', value: 'vc', waitMs: 4000 }, { atMs: g.atMs + 700 });
  g.do({ kind: 'semAcquire', name: 'S', sessionId: 'a', limit: 1, permits: 1, waitMs: 0 });
  g.do({ kind: 'semAcquire', name: 'S', sessionId: 'b', limit: 1, permits: 1, waitMs: 3000 }, { atMs: g.atMs + 300 });
  const t0 = 1_700_000_000_000;
  const st = exportState(g.fsm);
  assert.equal(st.v, 6);
  assert.deepEqual(st.waitTimes, [['lock', 'E', 'c', t0 + 700], ['lock', 'L', 'b', t0], ['semaphore', 'S', 'b', t0 + 1000]]);
  const copy = LockFsm.fromSnapshot(g.fsm.snapshot(encode), decode);
  assertFsmInvariants(copy);
  const byName = (ws: Iterable<{ name: string }>): unknown[] => [...ws].sort((x, y) => (x.name < y.name ? -1 : 1));
  assert.deepEqual(byName(copy.waits()), byName(g.fsm.waits()));
  assert.deepEqual(copy.waitOf('L', 'b'), { waitMs: 5000, since: 5, queuedAtMs: t0 });
  assert.deepEqual(Buffer.from(copy.snapshot(encode)), Buffer.from(g.fsm.snapshot(encode)));
  // a version 3 or 4 snapshot has no such section: every wait counts as queued at its log time
  const { waitTimes: _w, ...v3 } = st;
  const old = LockFsm.fromState({ ...v3, v: 3 });
  assertFsmInvariants(old);
  assert.deepEqual([...old.waits()].map((w) => w.queuedAtMs), [t0 + 1000, t0 + 1000, t0 + 1000]);
  // a state without waits writes no section
  const idle = new Log();
  idle.open('a');
  assert.equal(exportState(idle.fsm).waitTimes, undefined);
  const bad = (mutate: (s: StateV1) => void, re: RegExp): void => {
    const s = structuredClone(st);
    mutate(s);
    assert.throws(() => LockFsm.fromState(s), re);
  };
  bad((s) => { delete s.waitTimes; }, /waitTimes is missing \(3 requests wait\)/);
  bad((s) => { s.waitTimes!.pop(); }, /waitTimes has 2 rows for 3 waiting requests/);
  bad((s) => { s.waitTimes!.reverse(); }, /waitTimes\[1\] is out of order/);
  bad((s) => { s.waitTimes![1]![2] = 'a'; }, /waitTimes\[1\] names a wait for L that session a does not have/);
  bad((s) => { s.waitTimes![2]![0] = 'lock'; }, /waitTimes\[2\] names a wait for S that session b does not have/);
  bad((s) => { s.waitTimes![0]![3] = t0 + 5000; }, /waitTimes\[0\]\[3\] must be a log time in \[0, idem\.nowMs=/);
  bad((s) => { s.v = 3; }, /waitTimes is not a field of version 3/);
  bad((s) => { s.v = 4; }, /waitTimes is not a field of version 4/);
  bad((s) => { s.waitTimes = []; }, /waitTimes has 0 rows|written only when some request waits/);
});
