// Lock sets and deadlock detection in the state machine (docs/lock-fsm.md "Lock sets",
// "Deadlock detection"; docs/contract.md §5): examples, each checked against the FSM's own
// invariants (never a set partly held, queues in log order, no cycle in the wait-for graph).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockFsm, assertFsmInvariants, checkDeadlockAnswer, exportState, walkNewWait, wouldDeadlock, type ApplyOutput, type ApplyResult, type Command } from '../../src/lock-fsm/index.js';
import { Log, decode, encode } from './helpers.js';
import { LockModel } from '../model/lock-model.js';

function all(names: string[], sessionId: string, waitMs = 0, extra: Partial<Extract<Command, { kind: 'acquireAll' }>> = {}): Command {
  return { kind: 'acquireAll', names, sessionId, waitMs, ...extra };
}

function check(g: Log): void {
  assertFsmInvariants(g.fsm);
}

function granted(r: ApplyResult): { name: string; fencingToken: number }[] {
  assert.ok(r.ok && r.kind === 'acquired_all', JSON.stringify(r));
  return r.grants;
}

test('acquireAll grants every name in one apply: grants in the request order, consecutive tokens in name order', () => {
  const g = new Log();
  g.open('s1');
  const out = g.run(all(['b', 'c', 'a'], 's1'));
  const gr = granted(out.result);
  assert.deepEqual(gr.map((x) => x.name), ['b', 'c', 'a']);
  const tok = Object.fromEntries(gr.map((x) => [x.name, x.fencingToken]));
  assert.equal(tok['b'], (tok['a'] as number) + 1);
  assert.equal(tok['c'], (tok['a'] as number) + 2);
  assert.deepEqual(out.events.map((e) => e.type), ['granted', 'granted', 'granted']);
  for (const n of ['a', 'b', 'c']) assert.equal(g.fsm.check(n, tok[n] as number), true);
  check(g);
});

test('acquireAll: a name the session holds keeps its token; an exclusive set over a share it holds is refused at once (no upgrade)', () => {
  const g = new Log();
  g.open('s1');
  const ta = g.token('a', 's1');
  const gr = granted(g.do(all(['a', 'b'], 's1')));
  assert.equal(gr[0]?.fencingToken, ta);
  assert.ok((gr[1]?.fencingToken ?? 0) > ta);
  assert.ok(g.do({ kind: 'acquire', name: 'r', sessionId: 's1', waitMs: 0, mode: 'shared' }).ok);
  assert.deepEqual(g.do(all(['r', 'x'], 's1', 5000)), { ok: false, code: 'lock_held', blocked: [{ name: 'r' }] });
  assert.equal(g.fsm.getLock('x').held, false);
  const shared = g.do(all(['r', 'x'], 's1', 0, { mode: 'shared' }));
  assert.ok(shared.ok && shared.kind === 'acquired_all' && shared.mode === 'shared');
  check(g);
});

test('acquireAll with wait 0: lock_held naming each blocking lock and its holder; nothing is created', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  const tb = g.token('b', 's2');
  const r = g.do(all(['a', 'b', 'c'], 's1'));
  assert.deepEqual(r, { ok: false, code: 'lock_held', blocked: [{ name: 'b', holder: { sessionId: 's2', owner: 'owner-s2', fencingToken: tb } }] });
  assert.equal(g.fsm.getLock('a').held, false);
  // a new session is not opened for a refused set
  const n = g.do(all(['a', 'b'], 'fresh', 0, { newSession: { ttlMs: 5000, owner: 'o', lockDelayMs: 0 } }));
  assert.equal(n.ok, false);
  assert.equal(g.fsm.getSession('fresh'), undefined);
  check(g);
});

test('a waiting set holds one place at its index in every queue; a free name with a set queued is not granted to a later request', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  g.open('s3');
  const tb = g.token('b', 's2');
  const q = g.run(all(['a', 'b'], 's1', 5000));
  assert.ok(q.result.ok && q.result.kind === 'queued_all');
  assert.equal(q.result.since, g.index);
  assert.deepEqual(q.events.map((e) => e.type), ['waiting', 'waiting']);
  // 'a' is free but the set has the first place in its queue: strict FIFO
  assert.deepEqual(g.fsm.getLock('a'), { name: 'a', held: false, waiters: 1, inDelay: false });
  assert.deepEqual(g.acquire('a', 's3', 5000), { ok: true, kind: 'queued', name: 'a', sessionId: 's3', position: 2 });
  assert.deepEqual(g.acquire('a', 's3', 0), { ok: false, code: 'lock_held' });
  check(g);
  // b's release grants the whole set in one apply, then a's queue moves on
  const rel = g.run({ kind: 'release', name: 'b', sessionId: 's2', fencingToken: tb });
  const types = rel.events.map((e) => e.type);
  assert.deepEqual(types, ['released', 'granted', 'granted', 'setGranted']);
  const sg = rel.events.at(-1);
  assert.ok(sg?.type === 'setGranted' && sg.sessionId === 's1' && sg.since === q.result.since);
  assert.deepEqual(sg.grants.map((x) => x.name), ['a', 'b']);
  assert.deepEqual(g.fsm.getSession('s1')?.locks, ['a', 'b']);
  assert.deepEqual(g.fsm.lockQueue('a').map((w) => w.sessionId), ['s3']);
  check(g);
});

test('a queued set\'s Idempotency-Key answers the grant once granted; the same set again keeps its place', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  g.token('b', 's2');
  const first = g.do(all(['a', 'b'], 's1', 5000), { key: 'k1' });
  assert.ok(first.ok && first.kind === 'queued_all');
  // the same set (any order) again: the same place
  assert.deepEqual(g.do(all(['b', 'a'], 's1', 5000)), first);
  // another request over one of its names: refused, the set keeps waiting
  assert.deepEqual(g.do(all(['a', 'z'], 's1', 5000)), { ok: false, code: 'lock_held', blocked: [{ name: 'a' }] });
  assert.equal(g.fsm.getLock('a').waiters, 1);
  g.do({ kind: 'closeSession', sessionId: 's2' });
  const replay = g.run(all(['a', 'b'], 's1', 5000), { key: 'k1' });
  assert.equal(replay.replayed, true);
  const gr = granted(replay.result);
  assert.deepEqual(gr.map((x) => x.name), ['a', 'b']);
  for (const x of gr) assert.equal(g.fsm.check(x.name, x.fencingToken), true);
  check(g);
});

test('cancelWait of any place ends the whole set; a single acquire of a name the set waits on answers its place', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  g.token('c', 's2');
  const q = g.do(all(['a', 'b', 'c'], 's1', 5000));
  assert.ok(q.ok && q.kind === 'queued_all');
  assert.deepEqual(g.acquire('b', 's1', 5000), { ok: true, kind: 'queued', name: 'b', sessionId: 's1', position: 1 });
  assert.deepEqual(g.fsm.waitOf('a', 's1'), { waitMs: 5000, since: q.since, queuedAtMs: g.atMs });
  // the lessor lists the set once
  assert.deepEqual([...g.fsm.waits()].filter((w) => w.sessionId === 's1').map((w) => w.name), ['a']);
  assert.deepEqual(g.do({ kind: 'cancelWait', name: 'b', sessionId: 's1', since: q.since - 1 }), { ok: true, kind: 'noop' });
  const c = g.run({ kind: 'cancelWait', name: 'b', sessionId: 's1', since: q.since });
  assert.deepEqual(c.result, { ok: true, kind: 'wait_cancelled', name: 'b', sessionId: 's1' });
  assert.deepEqual(c.events.map((e) => e.type === 'waitEnded' && e.name), ['a', 'b', 'c']);
  assert.equal(g.fsm.getSession('s1')?.waiting.length, 0);
  assert.equal(g.fsm.getLock('a').waiters, 0);
  assert.equal(g.fsm.core.locks.has('a'), false);
  check(g);
});

test('a set that counted on a name its session held is withdrawn when that grant ends (never partly held)', () => {
  for (const end of ['release', 'revoke', 'expireHold'] as const) {
    const g = new Log();
    g.open('s1');
    g.open('s2');
    const ta = end === 'expireHold' ? (() => {
      const r = g.do({ kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 0, maxHoldMs: 1000 });
      assert.ok(r.ok && r.kind === 'acquired');
      return r.fencingToken;
    })() : g.token('a', 's1');
    g.token('b', 's2');
    const q = g.do(all(['a', 'b'], 's1', 5000));
    assert.ok(q.ok && q.kind === 'queued_all', end);
    const cmd: Command = end === 'release' ? { kind: 'release', name: 'a', sessionId: 's1' } : end === 'revoke' ? { kind: 'revoke', target: 'lock', name: 'a', sessionId: 's1' } : { kind: 'expireHold', target: 'lock', name: 'a', sessionId: 's1', fencingToken: ta };
    const out = g.run(cmd);
    assert.ok(out.events.some((e) => e.type === 'waitEnded' && e.name === 'b' && e.sessionId === 's1' && e.reason === 'cancelled'), end);
    assert.equal(g.fsm.getLock('b').waiters, 0, end);
    g.do({ kind: 'closeSession', sessionId: 's2' });
    assert.deepEqual(g.fsm.getSession('s1')?.locks, [], end);
    check(g);
  }
});

test('releaseAll releases the names held (request order in the answer) and ends the waits on them, a set as a whole', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  granted(g.do(all(['x', 'y'], 's1')));
  g.token('b', 's2');
  const q = g.do(all(['a', 'b'], 's1', 5000));
  assert.ok(q.ok);
  const out = g.run({ kind: 'releaseAll', names: ['y', 'b', 'x', 'nope'], sessionId: 's1' });
  assert.deepEqual(out.result, { ok: true, kind: 'released_all', released: ['y', 'x'] });
  assert.deepEqual(g.fsm.getSession('s1'), { sessionId: 's1', owner: 'owner-s1', ttlMs: 10_000, lockDelayMs: 0, locks: [], waiting: [] });
  assert.deepEqual(g.do({ kind: 'releaseAll', names: ['x'], sessionId: 's1' }), { ok: true, kind: 'released_all', released: [] });
  assert.deepEqual(g.do({ kind: 'releaseAll', names: ['x'], sessionId: 'gone' }), { ok: false, code: 'session_not_found' });
  check(g);
});

test('a session ending with a waiting set: every wait ends first, no grant goes back to it', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  g.open('s3');
  g.token('b', 's2');
  assert.ok(g.do(all(['a', 'b'], 's1', 5000)).ok);
  assert.ok(g.acquire('a', 's3', 5000).ok);
  const out = g.run({ kind: 'closeSession', sessionId: 's1' });
  assert.deepEqual(out.events.filter((e) => e.type === 'waitEnded').map((e) => e.type === 'waitEnded' && [e.name, e.reason]), [['a', 'session_ended'], ['b', 'session_ended']]);
  assert.ok(out.events.some((e) => e.type === 'granted' && e.name === 'a' && e.sessionId === 's3'));
  assert.equal(g.fsm.core.lockSets.size, 0);
  check(g);
});

test('sets over shared names are ordered alike in every queue and never wait for each other', () => {
  const g = new Log();
  for (const s of ['h', 's1', 's2']) g.open(s);
  g.token('a', 'h');
  g.token('b', 'h');
  assert.ok(g.do(all(['a', 'b'], 's1', 5000)).ok);
  // the opposite order: still behind s1 in both queues, no deadlock
  const q2 = g.do(all(['b', 'a'], 's2', 5000));
  assert.ok(q2.ok && q2.kind === 'queued_all', JSON.stringify(q2));
  assert.deepEqual(g.fsm.lockQueue('a').map((w) => w.sessionId), ['s1', 's2']);
  assert.deepEqual(g.fsm.lockQueue('b').map((w) => w.sessionId), ['s1', 's2']);
  const out = g.run({ kind: 'closeSession', sessionId: 'h' });
  assert.deepEqual(out.events.filter((e) => e.type === 'setGranted').map((e) => e.type === 'setGranted' && e.sessionId), ['s1']);
  const out2 = g.run({ kind: 'releaseAll', names: ['a', 'b'], sessionId: 's1' });
  assert.deepEqual(out2.events.filter((e) => e.type === 'setGranted').map((e) => e.type === 'setGranted' && e.sessionId), ['s2']);
  check(g);
});

test('per-name acquires in opposite order: the wait that closes the cycle gets deadlock at once, naming the cycle; nothing changes', () => {
  const g = new Log();
  g.open('s1');
  g.open('s2');
  g.token('accounts/1', 's1');
  g.token('accounts/2', 's2');
  assert.ok(g.acquire('accounts/2', 's1', 5000).ok);
  const before = encode(exportState(g.fsm).locks);
  const r = g.acquire('accounts/1', 's2', 5000);
  assert.deepEqual(r, { ok: false, code: 'deadlock', cycle: [{ sessionId: 's2', name: 'accounts/1' }, { sessionId: 's1', name: 'accounts/2' }] });
  assert.deepEqual(encode(exportState(g.fsm).locks), before);
  assert.equal(checkDeadlockAnswer(g.fsm, { target: 'lock', names: ['accounts/1'], shared: false }, r.ok ? [] : r.code === 'deadlock' ? r.cycle : []), null);
  assert.deepEqual(wouldDeadlock(g.fsm, 's2', { target: 'lock', names: ['accounts/1'], shared: false }), r.ok ? null : r.code === 'deadlock' ? r.cycle : null);
  // with acquire-all the same two transfers never deadlock
  const h = new Log();
  h.open('s1');
  h.open('s2');
  granted(h.do(all(['accounts/1', 'accounts/2'], 's1')));
  const q = h.do(all(['accounts/2', 'accounts/1'], 's2', 5000));
  assert.ok(q.ok && q.kind === 'queued_all');
  h.do({ kind: 'releaseAll', names: ['accounts/1', 'accounts/2'], sessionId: 's1' });
  assert.deepEqual(h.fsm.getSession('s2')?.locks, ['accounts/1', 'accounts/2']);
  check(g);
  check(h);
});

test('deadlocks through shared locks, semaphores, campaigns, queued-ahead requests and lock sets', () => {
  // shared: two readers waiting to write is the classic; here s2 holds a share of r and waits for w, s1 holds w and wants r exclusively
  let g = new Log();
  g.open('s1');
  g.open('s2');
  g.token('w', 's1');
  assert.ok(g.do({ kind: 'acquire', name: 'r', sessionId: 's2', waitMs: 0, mode: 'shared' }).ok);
  assert.ok(g.acquire('w', 's2', 5000).ok);
  // a shared request does not wait for a share: no cycle
  assert.ok(g.do({ kind: 'acquire', name: 'r', sessionId: 's1', waitMs: 5000, mode: 'shared' }).ok);
  g = new Log();
  g.open('s1');
  g.open('s2');
  g.token('w', 's1');
  assert.ok(g.do({ kind: 'acquire', name: 'r', sessionId: 's2', waitMs: 0, mode: 'shared' }).ok);
  assert.ok(g.acquire('w', 's2', 5000).ok);
  assert.deepEqual(g.acquire('r', 's1', 5000), { ok: false, code: 'deadlock', cycle: [{ sessionId: 's1', name: 'r' }, { sessionId: 's2', name: 'w' }] });
  check(g);

  // semaphore permits: s1 holds the only permit, waits for lock x held by s2; s2 asks for a permit
  g = new Log();
  g.open('s1');
  g.open('s2');
  assert.ok(g.do({ kind: 'semAcquire', name: 'pool', sessionId: 's1', limit: 1, permits: 1, waitMs: 0 }).ok);
  g.token('x', 's2');
  assert.ok(g.acquire('x', 's1', 5000).ok);
  assert.deepEqual(g.do({ kind: 'semAcquire', name: 'pool', sessionId: 's2', limit: 1, permits: 1, waitMs: 5000 }), { ok: false, code: 'deadlock', cycle: [{ sessionId: 's2', name: 'pool', kind: 'semaphore' }, { sessionId: 's1', name: 'x' }] });
  check(g);

  // a campaign is an exclusive request of its lock: the leader of e waits for x, x's holder campaigns
  g = new Log();
  g.open('s1');
  g.open('s2');
  assert.ok(g.do({ kind: 'campaign', name: 'e', sessionId: 's1', value: 'v1', waitMs: 0 }).ok);
  g.token('x', 's2');
  assert.ok(g.acquire('x', 's1', 5000).ok);
  assert.deepEqual(g.do({ kind: 'campaign', name: 'e', sessionId: 's2', value: 'v2', waitMs: 5000 }), { ok: false, code: 'deadlock', cycle: [{ sessionId: 's2', name: 'e' }, { sessionId: 's1', name: 'x' }] });
  check(g);

  // queued ahead: s1 waits on a (held by h) ahead of s2; s2 holds b; s1 then waits on b: s1 → s2 → s1
  g = new Log();
  for (const s of ['h', 's1', 's2']) g.open(s);
  g.token('a', 'h');
  g.token('b', 's2');
  assert.ok(g.acquire('a', 's1', 5000).ok);
  assert.ok(g.acquire('a', 's2', 5000).ok);
  assert.deepEqual(g.acquire('b', 's1', 5000), { ok: false, code: 'deadlock', cycle: [{ sessionId: 's1', name: 'b' }, { sessionId: 's2', name: 'a' }] });
  check(g);

  // a lock set closing a longer cycle: s1 holds p waits q(s2); s2 holds q waits r(s3); s3 asks for {r?, p} as a set
  g = new Log();
  for (const s of ['s1', 's2', 's3']) g.open(s);
  g.token('p', 's1');
  g.token('q', 's2');
  g.token('r', 's3');
  assert.ok(g.acquire('q', 's1', 5000).ok);
  assert.ok(g.acquire('r', 's2', 5000).ok);
  const r = g.do(all(['z', 'p'], 's3', 5000));
  assert.deepEqual(r, { ok: false, code: 'deadlock', cycle: [{ sessionId: 's3', name: 'p' }, { sessionId: 's1', name: 'q' }, { sessionId: 's2', name: 'r' }] });
  assert.equal(checkDeadlockAnswer(g.fsm, { target: 'lock', names: ['z', 'p'], shared: false }, r.ok ? [] : r.code === 'deadlock' ? r.cycle : []), null);
  assert.match(checkDeadlockAnswer(g.fsm, { target: 'lock', names: ['z', 'p'], shared: false }, [{ sessionId: 's3', name: 'p' }, { sessionId: 's2', name: 'q' }]) ?? '', /does not wait/);
  assert.equal(g.fsm.getLock('z').waiters, 0);
  check(g);
});

test('deciding costs nothing for a session that holds and waits for nothing, and about the smaller of the two reachable parts otherwise', () => {
  const g = new Log();
  for (let i = 0; i < 50; i++) g.open(`w${i}`);
  g.open('h');
  g.open('me');
  g.token('hot', 'h');
  for (let i = 0; i < 50; i++) assert.ok(g.acquire('hot', `w${i}`, 5000).ok);
  const me = g.fsm.core.sessions.get('me');
  assert.ok(me);
  assert.equal(walkNewWait(g.fsm.core, me, { target: 'lock', names: ['hot'], shared: false }).steps, 0);
  g.token('mine', 'me');
  // nobody waits for 'me': one step backward settles it, however long the queue it joins
  assert.deepEqual(walkNewWait(g.fsm.core, me, { target: 'lock', names: ['hot'], shared: false }), { cycle: null, steps: 0 });
  // someone waits on 'mine': the backward walk reaches that one session and stops there,
  // while the forward walk took its first step (the holder and the 50 requests ahead)
  g.open('x');
  assert.ok(g.acquire('mine', 'x', 5000).ok);
  const { cycle, steps } = walkNewWait(g.fsm.core, me, { target: 'lock', names: ['hot'], shared: false });
  assert.equal(cycle, null);
  assert.equal(steps, 1 + (1 + 50));
  // and when there is a cycle, the forward walk names it
  assert.ok(g.acquire('mine', 'h', 5000).ok);
  assert.deepEqual(walkNewWait(g.fsm.core, me, { target: 'lock', names: ['hot'], shared: false }).cycle, [{ sessionId: 'me', name: 'hot' }, { sessionId: 'h', name: 'mine' }]);
});

test('limits: a set needs room for each place (max_waiters_per_lock, max_locks)', () => {
  const g = new Log({ maxWaitersPerLock: 1, maxLocks: 6 });
  for (const s of ['s1', 's2', 's3']) g.open(s);
  g.token('a', 's1');
  assert.ok(g.acquire('a', 's2', 5000).ok);
  assert.deepEqual(g.do(all(['a', 'b'], 's3', 5000)), { ok: false, code: 'too_many_requests', limit: 'waiters' });
  // entries: a (1) + its waiter (1) = 2 used of 6; a set over c..f needs 4 entries, granted
  granted(g.do(all(['c', 'd', 'e', 'f'], 's3')));
  assert.deepEqual(g.do(all(['x', 'y'], 's1')), { ok: false, code: 'too_many_requests', limit: 'locks' });
  check(g);
});

test('max hold and lock-delay per name on a set\'s grants', () => {
  const g = new Log();
  g.open('s1', { lockDelayMs: 2000 });
  g.open('s2');
  const out = g.run(all(['a', 'b'], 's1', 0, { maxHoldMs: 1500 }));
  assert.deepEqual(out.events.map((e) => e.type === 'granted' && e.maxHoldMs), [1500, 1500]);
  assert.deepEqual(g.fsm.grantsWithMaxHold().map((h) => h.name), ['a', 'b']);
  const gr = granted(out.result);
  g.do({ kind: 'expireHold', target: 'lock', name: 'a', sessionId: 's1', fencingToken: gr[0]?.fencingToken ?? 0 });
  assert.equal(g.fsm.getLock('a').inDelay, true);
  assert.equal(g.fsm.check('b', gr[1]?.fencingToken ?? 0), true);
  // a set waiting on a name in lock-delay
  const q = g.do(all(['a', 'c'], 's2', 5000));
  assert.ok(q.ok && q.kind === 'queued_all');
  const end = g.run({ kind: 'endLockDelay', name: 'a' });
  assert.ok(end.events.some((e) => e.type === 'setGranted'));
  check(g);
});

test('snapshots: a waiting set is written in version 6\'s sets section and restores to identical bytes; without one, no section', () => {
  const g = new Log();
  for (const s of ['s1', 's2', 's3']) g.open(s);
  assert.equal(exportState(g.fsm).sets, undefined);
  g.token('b', 's2');
  g.token('h', 's1');
  assert.ok(g.do(all(['a', 'h', 'b'], 's1', 5000, { maxHoldMs: 900 }), { key: 'set-key' }).ok);
  assert.ok(g.do(all(['b', 'c'], 's3', 5000, { mode: 'shared' })).ok);
  const st = exportState(g.fsm);
  assert.equal(st.v, 6);
  assert.deepEqual(st.sets, [['s1', 6, ['a', 'h', 'b'], null, 'set-key'], ['s3', 7, ['b', 'c'], 'shared', null]]);
  const bytes = g.fsm.snapshot(encode);
  const copy = LockFsm.fromSnapshot(bytes, decode);
  assertFsmInvariants(copy);
  assert.deepEqual(Buffer.from(copy.snapshot(encode)), Buffer.from(bytes));
  // the copy goes on alike
  const cmd: Command = { kind: 'closeSession', sessionId: 's2' };
  const a = g.fsm.apply(20, { atMs: g.atMs, cmd });
  const b = copy.apply(20, { atMs: g.atMs, cmd });
  assert.deepEqual(b, a);
  assert.deepEqual(Buffer.from(copy.snapshot(encode)), Buffer.from(g.fsm.snapshot(encode)));
  // s1's set was granted; s3's shared set waits behind it on b
  assert.deepEqual(exportState(copy).sets, [['s3', 7, ['b', 'c'], 'shared', null]]);
  copy.apply(21, { atMs: g.atMs, cmd: { kind: 'releaseAll', names: ['a', 'b', 'h'], sessionId: 's1' } });
  assert.equal(exportState(copy).sets, undefined);
  assert.deepEqual(copy.getSession('s3')?.locks, ['b', 'c']);
});

test('snapshots: a corrupt sets section gives a clear error', () => {
  const g = new Log();
  for (const s of ['s1', 's2']) g.open(s);
  g.token('b', 's2');
  assert.ok(g.do(all(['a', 'b'], 's1', 5000)).ok);
  const base = exportState(g.fsm);
  const cases: [(s: Record<string, unknown>) => void, RegExp][] = [
    // without its sets section the set's places are lone waiters at the heads of free locks
    [(s) => { delete s['sets']; }, /head request that should have been granted/],
    [(s) => { s['v'] = 5; }, /sets is not a field of version 5/],
    [(s) => { (s['sets'] as unknown[][])[0]![2] = ['a', 'a']; }, /sets\[0\]\[2\] must be 1–64 distinct lock names/],
    [(s) => { (s['sets'] as unknown[][])[0]![2] = ['a', 'b', 'z']; }, /z is neither a place of this set nor held/],
    [(s) => { (s['sets'] as unknown[][])[0]![1] = 1; }, /a is neither a place of this set nor held/],
    [(s) => { s['sets'] = []; }, /sets is written only while a lock set waits/],
    // the set's place removed from a's queue: a free lock with a single waiter at its head
    [(s) => { (s['sets'] as unknown[][])[0]![2] = ['b']; }, /head request that should have been granted/],
  ];
  for (const [mutate, re] of cases) {
    const copy = structuredClone(base) as unknown as Record<string, unknown>;
    mutate(copy);
    assert.throws(() => LockFsm.fromState(copy), re);
  }
});

test('a session without sets ends while another set waits: the set granted on the way serves none of its waits (no crash)', () => {
  // x waits exclusively on a (held shared by s) and shared on b behind y's shared set {a, b}.
  // Ending x frees a for y, whose grant moves b's queue to x's shared wait there — which the
  // end is about to remove: every wait of x must leave its queue before any queue is served.
  const g = new Log();
  for (const s of ['s', 'x', 'y']) g.open(s);
  g.do({ kind: 'acquire', name: 'a', sessionId: 's', waitMs: 0, mode: 'shared' });
  g.do({ kind: 'acquire', name: 'z', sessionId: 'x', waitMs: 0 });
  assert.equal(g.do({ kind: 'acquire', name: 'a', sessionId: 'x', waitMs: 1000 }).ok, true);
  const q = g.do(all(['a', 'b'], 'y', 1000, { mode: 'shared' }));
  assert.ok(q.ok && q.kind === 'queued_all', JSON.stringify(q));
  const w = g.do({ kind: 'acquire', name: 'b', sessionId: 'x', waitMs: 1000, mode: 'shared' });
  assert.ok(w.ok && w.kind === 'queued', JSON.stringify(w));
  check(g);
  const out = g.run({ kind: 'closeSession', sessionId: 'x' });
  assert.ok(out.result.ok && out.result.kind === 'session_closed', JSON.stringify(out.result));
  check(g);
  assert.equal(out.events.filter((e) => e.type === 'granted' && e.sessionId === 'x').length, 0, 'the ending session was granted b');
  assert.ok(out.events.some((e) => e.type === 'setGranted' && e.sessionId === 'y'));
  assert.equal(g.fsm.getSession('x'), undefined);
});

/** s1 holds a (max hold, lock-delay) and waits for a, x, y as a set; s3's set of a and x
 *  queues behind it; then s1's hold of a runs out */
function holdEndsUnderWaitingSets(opts: ConstructorParameters<typeof Log>[0] = {}): { g: Log; out: ReturnType<Log['run']> } {
  const g = new Log(opts);
  g.open('s1', { lockDelayMs: 2000 });
  g.open('s2');
  g.open('s3');
  const held = g.do({ kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 0, maxHoldMs: 1500 });
  assert.ok(held.ok && held.kind === 'acquired');
  const ta = held.fencingToken;
  g.token('y', 's2');
  // s1 holds a (with a max hold) and waits for x and y as a set (x is free, y held): s1's place heads x's queue
  assert.ok(g.do(all(['a', 'x', 'y'], 's1', 5000)).ok);
  // s3's set of a and x waits behind it: at the head of a's queue, second in x's
  const q = g.do(all(['a', 'x'], 's3', 5000));
  assert.ok(q.ok && q.kind === 'queued_all', JSON.stringify(q));
  // s1's hold of a runs out: a goes into lock-delay, s1's set can no longer be granted
  // whole and leaves x's queue — and s3's set must wait for the delay, not take a now
  const out = g.run({ kind: 'expireHold', target: 'lock', name: 'a', sessionId: 's1', fencingToken: ta });
  return { g, out };
}

test('a hold that ends in lock-delay withdraws its holder\'s waiting set without granting the delayed name to the next set (sim-lock seed 181)', () => {
  const { g, out } = holdEndsUnderWaitingSets();
  check(g);
  assert.equal(g.fsm.getLock('a').inDelay, true);
  assert.equal(g.fsm.getLock('a').held, false);
  assert.ok(!out.events.some((e) => e.type === 'setGranted'), JSON.stringify(out.events));
  const end = g.run({ kind: 'endLockDelay', name: 'a' });
  assert.ok(end.events.some((e) => e.type === 'setGranted' && e.sessionId === 's3'), JSON.stringify(end.events));
  check(g);
});

test('the same with the old order (testWithdrawSetsBeforeDelay): s3 is granted a in its delay, and the invariants say so', () => {
  const { g } = holdEndsUnderWaitingSets({ testWithdrawSetsBeforeDelay: true });
  assert.throws(() => check(g), /lock a held during lock-delay/);
});

test('releaseAll ends the session\'s set that counts on a released name before it frees any: no set is answered with a name the same entry releases (FSM_SEED=1349505663)', () => {
  const g = new Log();
  g.open('s0');
  g.open('s3');
  granted(g.do(all(['d', 'c'], 's3')));
  // s0's shared set of c and a waits for c; s3's shared set of d (held) and a waits behind it on a
  assert.ok(g.do(all(['c', 'a'], 's0', 1000, { mode: 'shared' })).ok);
  const q = g.do(all(['d', 'a'], 's3', 1000, { mode: 'shared' }));
  assert.ok(q.ok && q.kind === 'queued_all', JSON.stringify(q));
  // releasing c serves s0's set, which moves a's queue to s3's set: it must not be granted
  // d there, since this very entry releases d next
  const out = g.run({ kind: 'releaseAll', names: ['c', 'd'], sessionId: 's3' });
  check(g);
  assert.deepEqual(out.events.filter((e) => e.type === 'setGranted').map((e) => e.sessionId), ['s0']);
  assert.ok(out.events.some((e) => e.type === 'waitEnded' && e.sessionId === 's3' && e.name === 'a'), JSON.stringify(out.events));
  assert.equal(g.fsm.getLock('d').held, false);
  assert.deepEqual(g.fsm.getSession('s3')?.waiting, []);
});

/** a Log whose every entry the reference model applies too, answering and ending alike */
class ModelLog extends Log {
  readonly model = new LockModel({ maxWaitersPerLock: 1000 });
  override run(cmd: Command, o: { key?: string; index?: number; atMs?: number } = {}): ApplyOutput {
    const out = super.run(cmd, o);
    const env = o.key === undefined ? { atMs: this.atMs, cmd } : { atMs: this.atMs, idempotencyKey: o.key, cmd };
    assert.deepEqual(this.model.apply(this.index, env), out, `entry ${this.index}: the model answers otherwise`);
    assert.deepEqual(this.model.export(), exportState(this.fsm), `entry ${this.index}: the model's state differs`);
    return out;
  }
}

/** s waits with set A (n held; l free but behind nothing, m held by x) and with shared set B
 *  (n held; y behind c's shared set over l and y, which waits behind A on l) */
function twoSetsOfOneSession(opts: { testEndWaitsOneByOne?: boolean } = {}): Log {
  const g = opts.testEndWaitsOneByOne === true ? new Log(opts) : new ModelLog();
  for (const s of ['s', 'c', 'x']) g.open(s);
  g.token('m', 'x');
  g.token('n', 's');
  assert.ok(g.do(all(['n', 'l', 'm'], 's', 60_000)).ok);
  assert.ok(g.do(all(['l', 'y'], 'c', 60_000, { mode: 'shared' })).ok);
  const b = g.do(all(['n', 'y'], 's', 60_000, { mode: 'shared' }));
  assert.ok(b.ok && b.kind === 'queued_all', JSON.stringify(b));
  check(g);
  return g;
}

test('a withdrawn set is not granted by the withdrawal of another: both sets counting on a lost name end before any queue is served', () => {
  // Before: ending A served l, which granted c's set, which let s's set B through on y —
  // granted with n, which s had just released — and ending B next failed the state
  // machine's invariant inside apply (on every replica, for that entry).
  const g = twoSetsOfOneSession();
  const out = g.run({ kind: 'release', name: 'n', sessionId: 's' });
  check(g);
  assert.deepEqual(out.events.filter((e) => e.type === 'setGranted').map((e) => e.sessionId), ['c']);
  assert.deepEqual(out.events.filter((e) => e.type === 'waitEnded').map((e) => e.name), ['l', 'm', 'y']);
  assert.deepEqual(g.fsm.getSession('s')?.waiting, []);
});

test('releaseAll ends every wait on its names before serving a queue: a set of the same session is not granted a name the entry releases', () => {
  // releaseAll [l, y]: ending A's wait on l serves l, which grants c's set and lets B
  // through on y; B would be answered with y, which this same entry then releases
  const g = twoSetsOfOneSession();
  const out = g.run({ kind: 'releaseAll', names: ['l', 'y'], sessionId: 's' });
  check(g);
  assert.deepEqual(out.result, { ok: true, kind: 'released_all', released: [] });
  assert.deepEqual(out.events.filter((e) => e.type === 'setGranted').map((e) => e.sessionId), ['c']);
  assert.equal(g.fsm.getLock('n').held, true);
});

test('the same with the old order (testEndWaitsOneByOne): the withdrawal grants the other set a name its session no longer holds, and apply fails', () => {
  const g = twoSetsOfOneSession({ testEndWaitsOneByOne: true });
  assert.throws(() => g.run({ kind: 'release', name: 'n', sessionId: 's' }), /lock set of s: n is neither granted nor held/);
});
