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
  assert.deepEqual(copy.apply(g.index + 1, { atMs: g.atMs, idempotencyKey: 'acq-1', cmd: { kind: 'barrier', term: 9 } }).result,
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
    [(s) => { s.v = 5; }, /^Error: corrupt lock-fsm snapshot: v must be one of 1, 2, 3, 4/],
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
