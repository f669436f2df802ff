// Elections in the lock FSM (docs/lock-fsm.md "Elections"): example cases beside the
// property test (elections.property.test.ts): campaign, FIFO succession, proclaim,
// resign, session end, lock-delay, the lessor's wait cancel, Idempotency-Key replay and
// settlement, value validation, and snapshots (version 3 and older versions).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidCommandError, Lessor, LockFsm, assertFsmInvariants, exportState, parseEnvelope, type Command } from '../../src/lock-fsm/index.js';
import { Log, decode, encode } from './helpers.js';

function three(): Log {
  const g = new Log();
  for (const s of ['a', 'b', 'c']) g.open(s, { lockDelayMs: s === 'a' ? 2000 : 0 });
  return g;
}

test('campaign: the first leads with its value; the others wait FIFO and lead in turn, each with a larger token', () => {
  const g = three();
  const r = g.run({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 0 });
  assert.ok(r.result.ok && r.result.kind === 'acquired' && r.result.value === 'vb');
  assert.deepEqual(r.events, [{ type: 'granted', name: 'E', sessionId: 'b', fencingToken: g.index, value: 'vb' }]);
  const t1 = g.index;
  // waitMs 0: lock_held naming the leader and its value
  assert.deepEqual(g.do({ kind: 'campaign', name: 'E', sessionId: 'c', value: 'vc', waitMs: 0 }), { ok: false, code: 'lock_held', holder: { sessionId: 'b', owner: 'owner-b', fencingToken: t1 }, value: 'vb' });
  assert.deepEqual(g.do({ kind: 'campaign', name: 'E', sessionId: 'c', value: 'vc', waitMs: 1000 }), { ok: true, kind: 'queued', name: 'E', sessionId: 'c', position: 1 });
  assert.deepEqual(g.do({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 1000 }), { ok: true, kind: 'queued', name: 'E', sessionId: 'a', position: 2 });
  // the leader campaigning again: its leadership, value unchanged
  assert.deepEqual(g.do({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'other', waitMs: 0 }), { ok: true, kind: 'acquired', name: 'E', sessionId: 'b', fencingToken: t1, ttlMs: 10_000, value: 'vb' });
  // resign: resigned, then the next candidate leads, in the same apply
  const res = g.run({ kind: 'resign', name: 'E', sessionId: 'b' });
  assert.deepEqual(res.result, { ok: true, kind: 'resigned', name: 'E', wasLeader: true });
  assert.deepEqual(res.events, [{ type: 'resigned', name: 'E', sessionId: 'b', fencingToken: t1 }, { type: 'granted', name: 'E', sessionId: 'c', fencingToken: g.index, value: 'vc' }]);
  assert.deepEqual(g.fsm.getElection('E'), { name: 'E', leader: { sessionId: 'c', owner: 'owner-c', value: 'vc', fencingToken: g.index }, waiters: 1 });
  assert.ok(g.index > t1);
  assertFsmInvariants(g.fsm);
});

test('proclaim: the leader changes its value; anyone else gets not_holder', () => {
  const g = three();
  g.do({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'v0', waitMs: 0 });
  const t = g.index;
  g.do({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 1000 });
  const p = g.run({ kind: 'proclaim', name: 'E', sessionId: 'a', value: 'v1' });
  assert.deepEqual(p.result, { ok: true, kind: 'proclaimed', name: 'E', value: 'v1' });
  assert.deepEqual(p.events, [{ type: 'proclaimed', name: 'E', sessionId: 'a', fencingToken: t, value: 'v1' }]);
  assert.equal(g.fsm.getElection('E').leader?.value, 'v1');
  assert.deepEqual(g.do({ kind: 'proclaim', name: 'E', sessionId: 'b', value: 'x' }), { ok: false, code: 'not_holder' }); // a candidate
  assert.deepEqual(g.do({ kind: 'proclaim', name: 'E', sessionId: 'c', value: 'x' }), { ok: false, code: 'not_holder' });
  assert.deepEqual(g.do({ kind: 'proclaim', name: 'F', sessionId: 'a', value: 'x' }), { ok: false, code: 'not_holder' });
  assert.deepEqual(g.do({ kind: 'proclaim', name: 'E', sessionId: 'gone', value: 'x' }), { ok: false, code: 'session_not_found' });
  // a plain lock is not an election: its holder cannot proclaim, nor campaign on it
  g.do({ kind: 'acquire', name: 'L', sessionId: 'c', waitMs: 0 });
  assert.deepEqual(g.do({ kind: 'proclaim', name: 'L', sessionId: 'c', value: 'x' }), { ok: false, code: 'not_holder' });
  assert.equal(g.do({ kind: 'campaign', name: 'L', sessionId: 'c', value: 'x', waitMs: 0 }).ok, false);
  assert.equal(g.fsm.getElection('L').leader, null);
  assertFsmInvariants(g.fsm);
});

test('a waiting candidate that resigns withdraws; a stranger gets not_holder', () => {
  const g = three();
  g.do({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 0 });
  g.do({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 1000 });
  const w = g.run({ kind: 'resign', name: 'E', sessionId: 'b' });
  assert.deepEqual(w.result, { ok: true, kind: 'resigned', name: 'E', wasLeader: false });
  assert.deepEqual(w.events, [{ type: 'waitEnded', name: 'E', sessionId: 'b', reason: 'cancelled' }]);
  assert.deepEqual(g.do({ kind: 'resign', name: 'E', sessionId: 'c' }), { ok: false, code: 'not_holder' });
  assert.deepEqual(g.do({ kind: 'resign', name: 'E', sessionId: 'a' }), { ok: true, kind: 'resigned', name: 'E', wasLeader: true });
  assert.deepEqual(g.fsm.getElection('E'), { name: 'E', leader: null, waiters: 0 });
  assert.equal(g.fsm.counts().electionLeaders, 0);
});

test('session end ends leadership and candidacy; expiry with lock-delay holds the election leaderless until endLockDelay', () => {
  const g = three();
  g.do({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 0 });
  g.do({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 1000 });
  g.do({ kind: 'campaign', name: 'E', sessionId: 'c', value: 'vc', waitMs: 1000 });
  g.do({ kind: 'closeSession', sessionId: 'b' }); // a candidate leaves the queue
  const exp = g.run({ kind: 'expireSession', sessionId: 'a' }); // a's lock-delay is 2000 ms
  assert.ok(exp.events.some((e) => e.type === 'lockDelayStarted' && e.name === 'E'));
  assert.equal(g.fsm.getElection('E').leader, null);
  const since = g.index;
  const end = g.run({ kind: 'endLockDelay', name: 'E', since });
  assert.deepEqual(end.events.at(-1), { type: 'granted', name: 'E', sessionId: 'c', fencingToken: g.index, value: 'vc' });
  g.do({ kind: 'closeSession', sessionId: 'c' });
  assert.deepEqual(g.fsm.getElection('E'), { name: 'E', leader: null, waiters: 0 });
  assertFsmInvariants(g.fsm);
});

test("the lessor's cancelWait ends a campaign's wait; if the grant won the race it answers the leadership with its value", () => {
  const g = three();
  g.do({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 0 });
  g.do({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 1000 });
  const since = g.fsm.waitOf('E', 'b')?.since;
  assert.equal(since, g.index);
  g.do({ kind: 'resign', name: 'E', sessionId: 'a' });
  assert.deepEqual(g.do({ kind: 'cancelWait', name: 'E', sessionId: 'b', since }), { ok: true, kind: 'acquired', name: 'E', sessionId: 'b', fencingToken: g.index - 1, ttlMs: 10_000, value: 'vb' });
  g.do({ kind: 'campaign', name: 'E', sessionId: 'c', value: 'vc', waitMs: 1000 });
  assert.deepEqual(g.do({ kind: 'cancelWait', name: 'E', sessionId: 'c', since: g.index }), { ok: true, kind: 'wait_cancelled', name: 'E', sessionId: 'c' });
});

test('Idempotency-Key: a replayed campaign answers the first answer; a queued campaign settles to its leadership', () => {
  const g = three();
  const first = g.do({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 0 }, { key: 'k1' });
  g.do({ kind: 'proclaim', name: 'E', sessionId: 'a', value: 'va2' });
  const again = g.run({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 0 }, { key: 'k1' });
  assert.equal(again.replayed, true);
  assert.deepEqual(again.result, first);
  assert.deepEqual(g.do({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 1000 }, { key: 'k2' }).ok, true);
  g.do({ kind: 'resign', name: 'E', sessionId: 'a' });
  const settled = g.run({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 1000 }, { key: 'k2' });
  assert.equal(settled.replayed, true);
  assert.deepEqual(settled.result, { ok: true, kind: 'acquired', name: 'E', sessionId: 'b', fencingToken: g.index - 1, ttlMs: 10_000, value: 'vb' });
  const p1 = g.do({ kind: 'proclaim', name: 'E', sessionId: 'b', value: 'p1' }, { key: 'k3' });
  g.do({ kind: 'proclaim', name: 'E', sessionId: 'b', value: 'p2' });
  assert.deepEqual(g.do({ kind: 'proclaim', name: 'E', sessionId: 'b', value: 'p1' }, { key: 'k3' }), p1);
  assert.equal(g.fsm.getElection('E').leader?.value, 'p2'); // the replay changed nothing
});

test('value: up to 4096 bytes of well-formed UTF-8, measured in bytes; the log refuses anything else, naming the field', () => {
  const env = (value: unknown): unknown => ({ atMs: 1, cmd: { kind: 'campaign', name: 'E', sessionId: 's', value, waitMs: 0 } });
  assert.doesNotThrow(() => parseEnvelope(env('x'.repeat(4096))));
  assert.doesNotThrow(() => parseEnvelope(env('')));
  assert.doesNotThrow(() => parseEnvelope(env('€'.repeat(1365)))); // 4095 bytes
  for (const bad of ['x'.repeat(4097), '€'.repeat(1366), '\ud800', 7, null]) {
    assert.throws(() => parseEnvelope(env(bad)), (e: unknown) => e instanceof InvalidCommandError && e.path === 'cmd.value');
  }
  assert.throws(() => parseEnvelope({ atMs: 1, cmd: { kind: 'proclaim', name: 'E', sessionId: 's', value: 'x'.repeat(4097) } }), /cmd\.value/);
  assert.throws(() => parseEnvelope({ atMs: 1, cmd: { kind: 'resign', name: 'E', sessionId: 's', value: 'x' } }), /cmd\.value is not a known field/);
});

test('snapshots: version 3 keeps leaders and candidates with their values; a corrupt elections section is refused; version 2 restores', () => {
  const g = three();
  g.do({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 0 });
  g.do({ kind: 'acquire', name: 'E', sessionId: 'b', waitMs: 1000 }); // a plain request in the same queue
  g.do({ kind: 'campaign', name: 'E', sessionId: 'c', value: 'vc', waitMs: 1000 });
  const st = exportState(g.fsm);
  assert.equal(st.v, 6); // versions 4–6 (key bindings, wait times, lock sets) keep version 3's elections section
  assert.deepEqual(st.elections, [['E', 'va', [['c', 'vc']]]]);
  const copy = LockFsm.fromSnapshot(g.fsm.snapshot(encode), decode);
  assertFsmInvariants(copy);
  assert.deepEqual(Buffer.from(copy.snapshot(encode)), Buffer.from(g.fsm.snapshot(encode)));
  // the restored copy hands the election on exactly as the original
  const cmds = [{ kind: 'resign', name: 'E', sessionId: 'a' }, { kind: 'release', name: 'E', sessionId: 'b' }] as const;
  for (const cmd of cmds) assert.deepEqual(copy.apply(g.index + 1, { atMs: g.atMs, cmd }), g.run(cmd));
  assert.equal(copy.getElection('E').leader?.value, 'vc');
  const bad = (mutate: (s: Record<string, unknown>) => void, re: RegExp): void => {
    const s = structuredClone(st) as unknown as Record<string, unknown>;
    mutate(s);
    assert.throws(() => LockFsm.fromState(s), re);
  };
  bad((s) => { s['elections'] = [['E', 'va', [['c', 'vc'], ['b', 'vb']]]]; }, /elections\[0\]\[2\]\[1\]\[0\] names no waiter/); // not in queue order
  bad((s) => { s['elections'] = [['Z', 'va', []]]; }, /elections\[0\]\[0\] names lock Z/);
  bad((s) => { s['elections'] = [['E', 'x'.repeat(4097), []]]; }, /elections\[0\]\[1\] must be an election value/);
  bad((s) => { s['elections'] = [['E', null, []]]; }, /elections\[0\] has neither/);
  bad((s) => { s['v'] = 2; }, /elections is not a field of version 2/);
  // a version 2 snapshot (no elections section) restores: its locks are plain locks
  const { elections: _e, waitTimes: _w, ...v2 } = st;
  const old = LockFsm.fromState({ ...v2, v: 2 });
  assertFsmInvariants(old);
  assert.equal(old.getElection('E').leader, null);
  assert.equal(old.getLock('E').holder?.sessionId, 'a');
});

test("the lessor times a campaign's wait out with cancelWait naming it (since), re-arms it on promotion, and a leader's expiry ends the leadership", () => {
  const g = new Log();
  const lessor = new Lessor({ tickMs: 100, retryMs: 1000 });
  let now = 0;
  lessor.promote(now, g.fsm);
  const run = (cmd: Command): void => lessor.observe(g.run(cmd, { atMs: now }).events, now);
  run({ kind: 'openSession', sessionId: 'a', ttlMs: 5000, owner: '', lockDelayMs: 0 });
  run({ kind: 'openSession', sessionId: 'b', ttlMs: 60_000, owner: '', lockDelayMs: 0 });
  run({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 0 });
  run({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 2000 });
  const since = g.fsm.waitOf('E', 'b')!.since;
  lessor.trackWait('E', 'b', now + 2000, since);
  const due: Command[] = [];
  for (; now <= 2100 && due.length === 0; now += 100) due.push(...lessor.due(now));
  assert.deepEqual(due, [{ kind: 'cancelWait', name: 'E', sessionId: 'b', since }]);
  // a new leader re-arms the wait from the FSM's own list (the election's waits are the lock's)
  run({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 2000 }); // still queued: the same wait
  const fresh = new Lessor({ tickMs: 100, retryMs: 1000 });
  fresh.promote(now, g.fsm);
  const later: Command[] = [];
  for (let t = now; t <= now + 6000; t += 100) later.push(...fresh.due(t));
  assert.ok(later.some((c) => c.kind === 'cancelWait' && c.name === 'E' && c.sessionId === 'b' && c.since === since), JSON.stringify(later));
  assert.ok(later.some((c) => c.kind === 'expireSession' && c.sessionId === 'a'), 'the leader that stopped renewing expires');
  for (const c of later) g.run(c);
  assert.equal(g.fsm.getElection('E').leader, null);
});

test('max_hold_ms on a campaign: the leadership is freed by expireHold like any grant (then lock-delay), and its end is an election event', () => {
  const g = three();
  const r = g.run({ kind: 'campaign', name: 'E', sessionId: 'a', value: 'va', waitMs: 0, maxHoldMs: 500 });
  const t = g.index;
  assert.deepEqual(r.events, [{ type: 'granted', name: 'E', sessionId: 'a', fencingToken: t, maxHoldMs: 500, value: 'va' }]);
  assert.deepEqual(g.do({ kind: 'campaign', name: 'E', sessionId: 'b', value: 'vb', waitMs: 1000 }), { ok: true, kind: 'queued', name: 'E', sessionId: 'b', position: 1 });
  const end = g.run({ kind: 'expireHold', target: 'lock', name: 'E', sessionId: 'a', fencingToken: t });
  assert.deepEqual(end.events[0], { type: 'grantExpired', kind: 'lock', name: 'E', sessionId: 'a', fencingToken: t, reason: 'max_hold', election: true });
  assert.equal(end.events[1]?.type, 'lockDelayStarted', "a's session has a lock-delay: the next candidate waits for it");
  assert.equal(g.fsm.getElection('E').leader, null);
  assertFsmInvariants(g.fsm);
  // a stale copy of the same expiry does nothing to a later leadership
  assert.deepEqual(g.do({ kind: 'expireHold', target: 'lock', name: 'E', sessionId: 'a', fencingToken: t }), { ok: true, kind: 'noop' });
});

test('listElections: the elections with a leader from a prefix, by name, with their waiters; plain locks and shares are not elections', () => {
  const g = three();
  g.do({ kind: 'campaign', name: 'svc/b', sessionId: 'a', value: 'va', waitMs: 0 });
  g.do({ kind: 'campaign', name: 'svc/b', sessionId: 'b', value: 'vb', waitMs: 1000 });
  g.do({ kind: 'campaign', name: 'svc/a', sessionId: 'c', value: 'vc', waitMs: 0 });
  g.do({ kind: 'acquire', name: 'svc/plain', sessionId: 'b', waitMs: 0 });
  g.do({ kind: 'acquire', name: 'svc/shared', sessionId: 'c', waitMs: 0, mode: 'shared' });
  g.do({ kind: 'campaign', name: 'other', sessionId: 'b', value: 'vo', waitMs: 0 });
  const list = g.fsm.listElections('svc/', 10);
  assert.deepEqual(list.map((e) => [e.name, e.leader?.sessionId, e.leader?.value, e.waiters]), [['svc/a', 'c', 'vc', 0], ['svc/b', 'a', 'va', 1]]);
  assert.deepEqual(g.fsm.listElections('', 1).map((e) => e.name), ['other']);
  assert.deepEqual(g.fsm.listElections('', 0), []);
  // a resign hands the leadership on: the list shows the new leader
  g.do({ kind: 'resign', name: 'svc/b', sessionId: 'a' });
  assert.deepEqual(g.fsm.listElections('svc/b', 10).map((e) => [e.leader?.sessionId, e.leader?.value, e.waiters]), [['b', 'vb', 0]]);
});
