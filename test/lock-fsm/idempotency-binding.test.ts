// An Idempotency-Key is bound to the request that first used it (docs/lock-fsm.md
// "Idempotency"): its command kind and name, its principal and its body's digest. A retry
// of that request gets the first answer; the key with anything else is refused with
// idempotency_key_reused and changes nothing — on every replica, after a snapshot, and for
// keys restored from a snapshot of a version before bindings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  InvalidCommandError, LockFsm, exportState, parseEnvelope, type ApplyOutput, type Command, type Envelope, type KeyBinding,
} from '../../src/lock-fsm/index.js';
import { IdempotencyTable } from '../../src/lock-fsm/idempotency.js';
import { decode, encode } from './helpers.js';

const D1 = 'a'.repeat(32);
const D2 = 'b'.repeat(32);
const ALICE: KeyBinding = { principal: 'alice', digest: D1 };

/** a log of envelopes at consecutive indexes */
class Keyed {
  index = 0;
  constructor(readonly fsm = new LockFsm()) {}
  apply(cmd: Command, key?: string, keyBinding?: KeyBinding): ApplyOutput {
    const env: Envelope = key === undefined ? { atMs: 1000, cmd } : keyBinding === undefined ? { atMs: 1000, idempotencyKey: key, cmd } : { atMs: 1000, idempotencyKey: key, keyBinding, cmd };
    return this.fsm.apply(++this.index, parseEnvelope(env));
  }
  open(id: string, principal?: string): void {
    const r = this.apply({ kind: 'openSession', sessionId: id, ttlMs: 10_000, owner: id, lockDelayMs: 0, ...(principal !== undefined ? { principal } : {}) }).result;
    assert.ok(r.ok, JSON.stringify(r));
  }
}

/** the state without lastApplied (which every entry advances, refused or not) */
function stateOf(fsm: LockFsm): unknown {
  const { lastApplied: _l, ...rest } = exportState(fsm);
  return rest;
}

test('the issue: b holds Y; a acquires X with K; a acquires Y with K is refused and b still holds Y', () => {
  const g = new Keyed();
  g.open('a');
  g.open('b');
  g.apply({ kind: 'acquire', name: 'Y', sessionId: 'b', waitMs: 0 });
  const x = g.apply({ kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 }, 'K', ALICE);
  assert.equal(x.result.ok && x.result.kind, 'acquired');
  const before = stateOf(g.fsm);
  const y = g.apply({ kind: 'acquire', name: 'Y', sessionId: 'a', waitMs: 0 }, 'K', { principal: 'alice', digest: D2 });
  assert.deepEqual(y, { result: { ok: false, code: 'idempotency_key_reused', differs: 'name' }, events: [] });
  assert.deepEqual(stateOf(g.fsm), before, 'nothing changed, the key still answers its first request');
  assert.equal(g.fsm.getLock('Y').holder?.sessionId, 'b');
  // and its first request still gets its first answer
  assert.deepEqual(g.apply({ kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 }, 'K', ALICE), { result: x.result, events: [], replayed: true });
});

test('each part of the binding: principal, operation, name, body; the principal is named first', () => {
  const g = new Keyed();
  g.open('a');
  g.apply({ kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 }, 'K', ALICE);
  const refused = (cmd: Command, b: KeyBinding): unknown => {
    const out = g.apply(cmd, 'K', b);
    return out.result.ok ? out.result.kind : out.result.code === 'idempotency_key_reused' ? out.result.differs : out.result.code;
  };
  const acquireX: Command = { kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 };
  assert.equal(refused(acquireX, { principal: 'bob', digest: D1 }), 'principal');
  assert.equal(refused(acquireX, { principal: '', digest: D1 }), 'principal', 'anonymous is a principal of its own');
  assert.equal(refused({ kind: 'release', name: 'Y', sessionId: 'a' }, { principal: 'bob', digest: D2 }), 'principal', 'another principal learns nothing else');
  assert.equal(refused({ kind: 'release', name: 'X', sessionId: 'a' }, ALICE), 'operation');
  assert.equal(refused({ kind: 'campaign', name: 'X', sessionId: 'a', value: 'v', waitMs: 0 }, ALICE), 'operation');
  assert.equal(refused({ kind: 'acquire', name: 'Z', sessionId: 'a', waitMs: 0 }, ALICE), 'name');
  assert.equal(refused(acquireX, { principal: 'alice', digest: D2 }), 'body');
  assert.equal(refused(acquireX, ALICE), 'acquired', 'the same request replays');
  assert.equal(g.fsm.getLock('Z').held, false);
  assert.equal(g.fsm.getLock('X').holder?.sessionId, 'a');
});

test('release Y with the key of release X is refused and Y stays held; the refusal is not remembered', () => {
  const g = new Keyed();
  g.open('a');
  g.apply({ kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 });
  g.apply({ kind: 'acquire', name: 'Y', sessionId: 'a', waitMs: 0 });
  assert.deepEqual(g.apply({ kind: 'release', name: 'X', sessionId: 'a' }, 'R', ALICE).result, { ok: true, kind: 'released', name: 'X' });
  const out = g.apply({ kind: 'release', name: 'Y', sessionId: 'a' }, 'R', { principal: 'alice', digest: D2 });
  assert.deepEqual(out.result, { ok: false, code: 'idempotency_key_reused', differs: 'name' });
  assert.equal(g.fsm.getLock('Y').holder?.sessionId, 'a', 'Y is still held');
  assert.deepEqual([...g.fsm.core.idem.entries()].map((e) => [e.key, e.result]), [['R', { ok: true, kind: 'released', name: 'X' }]]);
});

test('a session open is bound without its drawn id; a session close to its session', () => {
  const g = new Keyed();
  const first = g.apply({ kind: 'openSession', sessionId: 's1', ttlMs: 5000, owner: '', lockDelayMs: 0 }, 'O', ALICE);
  // the leader draws a new id per attempt: the retry is the same request
  assert.deepEqual(g.apply({ kind: 'openSession', sessionId: 's2', ttlMs: 5000, owner: '', lockDelayMs: 0 }, 'O', ALICE), { result: first.result, events: [], replayed: true });
  assert.equal(g.fsm.counts().sessions, 1);
  g.open('s3');
  g.apply({ kind: 'closeSession', sessionId: 's1' }, 'C', ALICE);
  assert.deepEqual(g.apply({ kind: 'closeSession', sessionId: 's3' }, 'C', ALICE).result, { ok: false, code: 'idempotency_key_reused', differs: 'name' });
  assert.ok(g.fsm.getSession('s3'), 's3 was not closed');
});

test('an entry without keyBinding (a version before bindings) is bound to its kind and name only', () => {
  const g = new Keyed();
  g.open('a');
  g.open('b');
  const first = g.apply({ kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 }, 'K');
  assert.deepEqual([...g.fsm.core.idem.entries()][0]!.binding, { kind: 'acquire', target: 'X', principal: null, digest: null });
  assert.deepEqual(g.apply({ kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 }, 'K', ALICE), { result: first.result, events: [], replayed: true }, 'unknown parts are not compared');
  assert.equal(g.apply({ kind: 'acquire', name: 'Y', sessionId: 'a', waitMs: 0 }, 'K').result.ok, false);
  assert.equal(g.apply({ kind: 'release', name: 'X', sessionId: 'a' }, 'K').result.ok, false);
  assert.equal(g.fsm.getLock('X').holder?.sessionId, 'a');
});

test('bindings survive a snapshot (version 4 and later): a restored replica refuses and replays exactly as the original', () => {
  const g = new Keyed();
  g.open('a');
  g.open('b');
  g.apply({ kind: 'acquire', name: 'Y', sessionId: 'b', waitMs: 0 });
  const x = g.apply({ kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 }, 'K', ALICE);
  g.apply({ kind: 'acquire', name: 'Q', sessionId: 'a', waitMs: 0 }, 'L');
  const st = exportState(g.fsm);
  assert.equal(st.v, 6); // bindings came with version 4
  assert.deepEqual(st.idem.entries.map((e) => e[3]), [['acquire', 'X', 'alice', D1], ['acquire', 'Q', null, null]]);
  const copy = LockFsm.fromSnapshot(g.fsm.snapshot(encode), decode);
  assert.deepEqual(Buffer.from(copy.snapshot(encode)), Buffer.from(g.fsm.snapshot(encode)));
  const reuse: Envelope = { atMs: 1000, idempotencyKey: 'K', keyBinding: ALICE, cmd: { kind: 'acquire', name: 'Y', sessionId: 'a', waitMs: 0 } };
  assert.deepEqual(copy.apply(g.index + 1, reuse), g.fsm.apply(g.index + 1, reuse));
  assert.deepEqual(copy.apply(g.index + 2, reuse).result, { ok: false, code: 'idempotency_key_reused', differs: 'name' });
  assert.equal(copy.getLock('Y').holder?.sessionId, 'b');
  const retry: Envelope = { atMs: 1000, idempotencyKey: 'K', keyBinding: ALICE, cmd: { kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 } };
  assert.deepEqual(copy.apply(g.index + 3, retry), { result: x.result, events: [], replayed: true });
});

test('a version 3 snapshot restores; its keys answer only what their stored result could answer', () => {
  const g = new Keyed();
  g.open('a');
  g.open('b');
  g.apply({ kind: 'acquire', name: 'Y', sessionId: 'b', waitMs: 0 });
  const x = g.apply({ kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 }, 'K');
  g.apply({ kind: 'acquire', name: 'Y', sessionId: 'a', waitMs: 0 }, 'H'); // lock_held: a refusal names nothing
  g.apply({ kind: 'closeSession', sessionId: 'b' }, 'C');
  g.open('c');
  // what a version 3 build wrote: 3-element key tuples
  const st = exportState(g.fsm);
  const v3 = { ...st, v: 3, idem: { nowMs: st.idem.nowMs, entries: st.idem.entries.map((e) => [e[0], e[1], e[2]]) } };
  const old = LockFsm.fromState(v3);
  assert.deepEqual([...old.core.idem.entries()].map((e) => e.binding), [null, null, null]);
  let i = g.index;
  const run = (cmd: Command, key: string): ApplyOutput => old.apply(++i, { atMs: 1000, idempotencyKey: key, keyBinding: ALICE, cmd });
  assert.deepEqual(run({ kind: 'acquire', name: 'X', sessionId: 'a', waitMs: 0 }, 'K'), { result: x.result, events: [], replayed: true });
  assert.deepEqual(run({ kind: 'acquire', name: 'Z', sessionId: 'a', waitMs: 0 }, 'K').result, { ok: false, code: 'idempotency_key_reused', differs: 'name' });
  assert.deepEqual(run({ kind: 'release', name: 'X', sessionId: 'a' }, 'K').result, { ok: false, code: 'idempotency_key_reused', differs: 'operation' });
  assert.deepEqual(run({ kind: 'closeSession', sessionId: 'c' }, 'C').result, { ok: false, code: 'idempotency_key_reused', differs: 'name' });
  assert.equal(run({ kind: 'acquire', name: 'Y', sessionId: 'a', waitMs: 0 }, 'H').replayed, true, 'a stored refusal replays');
  assert.ok(old.getSession('c'));
  assert.equal(old.getLock('X').holder?.sessionId, 'a');
  // written again by this build, an old key keeps its unknown binding
  assert.deepEqual(exportState(old).idem.entries.map((e) => e[3]), [null, null, null]);
  assert.deepEqual(exportState(LockFsm.fromSnapshot(old.snapshot(encode), decode)), exportState(old));
});

test('parseEnvelope: keyBinding only with a key, a principal or anonymous, a hex digest; canonical order', () => {
  const cmd: Command = { kind: 'barrier', term: 1 };
  const field = (x: unknown): string => {
    try {
      parseEnvelope(x);
      return 'ok';
    } catch (err) {
      assert.ok(err instanceof InvalidCommandError, String(err));
      return err.path;
    }
  };
  assert.equal(field({ atMs: 1, keyBinding: ALICE, cmd }), 'envelope.keyBinding');
  assert.equal(field({ atMs: 1, idempotencyKey: 'k', keyBinding: { principal: 'a b', digest: D1 }, cmd }), 'envelope.keyBinding.principal');
  assert.equal(field({ atMs: 1, idempotencyKey: 'k', keyBinding: { principal: 'a', digest: 'A'.repeat(32) }, cmd }), 'envelope.keyBinding.digest');
  assert.equal(field({ atMs: 1, idempotencyKey: 'k', keyBinding: { principal: 'a', digest: 'a'.repeat(31) }, cmd }), 'envelope.keyBinding.digest');
  assert.equal(field({ atMs: 1, idempotencyKey: 'k', keyBinding: { principal: 'a', digest: D1, extra: 1 }, cmd }), 'envelope.keyBinding.extra');
  assert.equal(field({ atMs: 1, idempotencyKey: 'k', keyBinding: null, cmd }), 'envelope.keyBinding');
  assert.equal(field({ atMs: 1, idempotencyKey: 'k', keyBinding: { principal: '', digest: 'c'.repeat(64) }, cmd }), 'ok');
  const env = parseEnvelope({ cmd, keyBinding: { digest: D1, principal: 'a' }, idempotencyKey: 'k', atMs: 1 });
  assert.deepEqual(Object.keys(env), ['atMs', 'idempotencyKey', 'keyBinding', 'cmd']);
  assert.deepEqual(Object.keys(env.keyBinding!), ['principal', 'digest']);
});

test('a refusal is never recorded as a key\'s answer', () => {
  const t = new IdempotencyTable(600_000, 10);
  const env: Envelope = { atMs: 1, idempotencyKey: 'k', cmd: { kind: 'barrier', term: 1 } };
  assert.throws(() => t.put('k', { ok: false, code: 'idempotency_key_reused', differs: 'body' }, env), /not its answer/);
  assert.equal(t.size, 0);
});

test('a wait that ends without a grant settles its key to the refusal: lock_held as the lock stood, session_not_found, semaphore_full, a set\'s lock_held with blocked; a snapshot keeps it', () => {
  const g = new Keyed();
  for (const s of ['a', 'b', 'c', 'd']) g.open(s);
  g.apply({ kind: 'acquire', name: 'L', sessionId: 'a', waitMs: 0 });
  g.apply({ kind: 'semAcquire', name: 'S', sessionId: 'a', limit: 1, permits: 1, waitMs: 0 });
  const requests: [Command, string][] = [
    [{ kind: 'acquire', name: 'L', sessionId: 'b', waitMs: 5000 }, 'KL'],
    [{ kind: 'semAcquire', name: 'S', sessionId: 'b', limit: 1, permits: 1, waitMs: 5000 }, 'KS'],
    [{ kind: 'acquireAll', names: ['L', 'M'], sessionId: 'd', waitMs: 5000 }, 'KSET'],
    [{ kind: 'acquire', name: 'L', sessionId: 'c', waitMs: 5000 }, 'KC'],
  ];
  const first = requests.map(([cmd, key]) => g.apply(cmd, key, ALICE).result);
  assert.deepEqual(first.map((r) => r.ok && r.kind), ['queued', 'sem_queued', 'queued_all', 'queued']);
  const set = first[2]!;
  assert.ok(set.ok && set.kind === 'queued_all');
  // the lessor ends b's and d's waits by their wait_ms; c's session is closed
  g.apply({ kind: 'cancelWait', name: 'L', sessionId: 'b' });
  g.apply({ kind: 'semCancelWait', name: 'S', sessionId: 'b', since: g.fsm.semWaitOf('S', 'b')!.since });
  g.apply({ kind: 'cancelWait', name: 'M', sessionId: 'd', since: set.since });
  g.apply({ kind: 'closeSession', sessionId: 'c' });
  const holderA = { sessionId: 'a', owner: 'a', fencingToken: g.fsm.getLock('L').holder!.fencingToken };
  const told = [
    { ok: false, code: 'lock_held', holder: holderA },
    { ok: false, code: 'semaphore_full', inUse: 1, limit: 1 },
    { ok: false, code: 'lock_held', blocked: [{ name: 'L', holder: holderA }, { name: 'M' }] },
    { ok: false, code: 'session_not_found' },
  ];
  const copy = new Keyed(LockFsm.fromSnapshot(g.fsm.snapshot(encode), decode));
  copy.index = g.index;
  // every later copy of each request gets what its wait was told, on the original and on a
  // restored replica, and nothing waits again
  for (const k of [g, copy]) assert.deepEqual(requests.map(([cmd, key]) => k.apply(cmd, key, ALICE)), told.map((result) => ({ result, events: [], replayed: true })));
  assert.deepEqual(g.fsm.getSession('b')?.waiting, []);
  assert.deepEqual(g.fsm.getSession('d')?.waiting, []);
  assert.deepEqual(g.fsm.getSemaphore('S').waiters, []);
});

test('requests of the session that joined a wait settle with it: every key whose answer was that wait\'s queued, on the original and on a replica restored while they waited', () => {
  const g = new Keyed();
  for (const s of ['a', 'b', 'd']) g.open(s);
  g.apply({ kind: 'acquire', name: 'L', sessionId: 'a', waitMs: 0 });
  g.apply({ kind: 'acquire', name: 'N', sessionId: 'a', waitMs: 0 });
  g.apply({ kind: 'semAcquire', name: 'S', sessionId: 'a', limit: 1, permits: 1, waitMs: 0 });
  // b's wait on L begins without a key; two keyed requests of b join it. b's semaphore
  // wait begins with a key and one joins it. d's set waits for L and M; the same set again
  // and a single acquire of M by d join it.
  const requests: [Command, string | undefined][] = [
    [{ kind: 'acquire', name: 'N', sessionId: 'b', waitMs: 5000 }, undefined],
    [{ kind: 'acquire', name: 'N', sessionId: 'b', waitMs: 5000 }, 'KN1'],
    [{ kind: 'acquire', name: 'N', sessionId: 'b', waitMs: 9000 }, 'KN2'],
    [{ kind: 'semAcquire', name: 'S', sessionId: 'b', limit: 1, permits: 1, waitMs: 5000 }, 'KS1'],
    [{ kind: 'semAcquire', name: 'S', sessionId: 'b', limit: 1, permits: 1, waitMs: 7000 }, 'KS2'],
    [{ kind: 'acquireAll', names: ['L', 'M'], sessionId: 'd', waitMs: 5000 }, 'KSET1'],
    [{ kind: 'acquireAll', names: ['L', 'M'], sessionId: 'd', waitMs: 6000 }, 'KSET2'],
    [{ kind: 'acquire', name: 'M', sessionId: 'd', waitMs: 5000 }, 'KM'],
  ];
  const first = requests.map(([cmd, key]) => g.apply(cmd, key, key === undefined ? undefined : ALICE).result);
  assert.deepEqual(first.map((r) => r.ok && r.kind), ['queued', 'queued', 'queued', 'sem_queued', 'sem_queued', 'queued_all', 'queued_all', 'queued']);
  // a replica restored while they wait indexes the joined keys from the stored answers alone
  const copy = new Keyed(LockFsm.fromSnapshot(g.fsm.snapshot(encode), decode));
  copy.index = g.index;
  // a releases everything: b's waits and d's set are granted
  for (const k of [g, copy]) {
    k.apply({ kind: 'release', name: 'N', sessionId: 'a' });
    k.apply({ kind: 'semRelease', name: 'S', sessionId: 'a' });
    k.apply({ kind: 'release', name: 'L', sessionId: 'a' });
  }
  assert.deepEqual(stateOf(copy.fsm), stateOf(g.fsm), 'the restored replica settled the same keys');
  const n = g.fsm.getLock('N').holder!;
  const l = g.fsm.getLock('L').holder!;
  const m = g.fsm.getLock('M').holder!;
  assert.deepEqual([n.sessionId, l.sessionId, m.sessionId], ['b', 'd', 'd']);
  const nGrant = { ok: true, kind: 'acquired', name: 'N', sessionId: 'b', fencingToken: n.fencingToken, ttlMs: 10_000 };
  const sGrant = g.apply(requests[3]![0], 'KS1', ALICE).result;
  assert.ok(sGrant.ok && sGrant.kind === 'sem_acquired', JSON.stringify(sGrant));
  const setGrant = g.apply(requests[5]![0], 'KSET1', ALICE).result;
  assert.deepEqual(setGrant, { ok: true, kind: 'acquired_all', sessionId: 'd', ttlMs: 10_000, grants: [{ name: 'L', fencingToken: l.fencingToken }, { name: 'M', fencingToken: m.fencingToken }] });
  const told = [nGrant, nGrant, sGrant, sGrant, setGrant, setGrant, { ok: true, kind: 'acquired', name: 'M', sessionId: 'd', fencingToken: m.fencingToken, ttlMs: 10_000 }];
  // the grants end; every joined key still answers the grant its wait came to
  g.apply({ kind: 'closeSession', sessionId: 'b' });
  g.apply({ kind: 'closeSession', sessionId: 'd' });
  assert.deepEqual(requests.slice(1).map(([cmd, key]) => g.apply(cmd, key, ALICE)), told.map((result) => ({ result, events: [], replayed: true })));
});

test('requests that joined a wait that ends without a grant get its refusal: a single acquire that joined a set\'s place too', () => {
  const g = new Keyed();
  for (const s of ['a', 'b', 'd']) g.open(s);
  g.apply({ kind: 'acquire', name: 'L', sessionId: 'a', waitMs: 0 });
  const requests: [Command, string][] = [
    [{ kind: 'acquire', name: 'L', sessionId: 'b', waitMs: 5000 }, 'KB1'],
    [{ kind: 'acquire', name: 'L', sessionId: 'b', waitMs: 5000 }, 'KB2'],
    [{ kind: 'acquireAll', names: ['L', 'M'], sessionId: 'd', waitMs: 5000 }, 'KSET'],
    [{ kind: 'acquire', name: 'L', sessionId: 'd', waitMs: 5000 }, 'KDL'],
  ];
  const first = requests.map(([cmd, key]) => g.apply(cmd, key, ALICE).result);
  assert.deepEqual(first.map((r) => r.ok && r.kind), ['queued', 'queued', 'queued_all', 'queued']);
  const set = first[2]!;
  assert.ok(set.ok && set.kind === 'queued_all');
  g.apply({ kind: 'cancelWait', name: 'L', sessionId: 'b' });
  g.apply({ kind: 'cancelWait', name: 'M', sessionId: 'd', since: set.since });
  const holderA = { sessionId: 'a', owner: 'a', fencingToken: g.fsm.getLock('L').holder!.fencingToken };
  const told = [
    { ok: false, code: 'lock_held', holder: holderA },
    { ok: false, code: 'lock_held', holder: holderA },
    { ok: false, code: 'lock_held', blocked: [{ name: 'L', holder: holderA }, { name: 'M' }] },
    { ok: false, code: 'lock_held', holder: holderA },
  ];
  assert.deepEqual(requests.map(([cmd, key]) => g.apply(cmd, key, ALICE)), told.map((result) => ({ result, events: [], replayed: true })));
  assert.deepEqual(g.fsm.getLock('L').waiters, 0);
});
