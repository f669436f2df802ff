// Property test of lock sets and deadlock detection (docs/lock-fsm.md "Lock sets",
// "Deadlock detection"): random command sequences over overlapping names — single acquires
// in both modes, campaigns, semaphores, acquire-all of random subsets, releases, release-all,
// cancels, session ends, revokes, max-hold ends, lock-delays — and after EVERY command:
//  - the FSM's own invariants (assertFsmInvariants: every waiting set whole, queues in log
//    order, and no cycle in the wait-for graph);
//  - never a set partly held: in one apply, the places of a waiting set are granted all
//    together (with its setGranted) or none; an acquired_all and a setGranted name every
//    one of the set's names, each held by its session under the token answered;
//  - every `deadlock` answer names a real cycle of the state it was refused in, that state
//    is left unchanged, and the walk the checkers use gives the same answer;
//  - fencing tokens strictly increase over every grant;
//  - the reference model (test/model/lock-model.ts) gives the same result and events and
//    exports the same state after every command;
//  - a snapshot taken at a random point and restored elsewhere, fed the rest of the log,
//    ends in identical bytes.
//
// Replay a failure: FSM_SEED=<seed printed below> node --test dist/test/lock-fsm/lock-sets.property.test.js
// (FSM_RUNS=N changes the run count).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LockFsm, assertFsmInvariants, checkDeadlockAnswer, exportState, wouldDeadlock, type ApplyOutput, type Command, type NewWait } from '../../src/lock-fsm/index.js';
import { compact, maybe } from './model-property.js';
import { decode, encode } from './helpers.js';
import { testSeed } from '../support/seed.js';
import { LockModel } from '../model/lock-model.js';

const runs = Number(process.env['FSM_RUNS'] ?? 300);
const seed = testSeed('FSM_SEED', { what: `lock-set property tests, ${runs} runs`, replay: 'node --test dist/test/lock-fsm/lock-sets.property.test.js' });

const SIDS = ['s0', 's1', 's2', 's3', 's4'];
const NAMES = ['a', 'b', 'c', 'd'];
const sid = fc.constantFrom(...SIDS);
const name = fc.constantFrom(...NAMES);
const names = fc.uniqueArray(name, { minLength: 1, maxLength: 4 });
const waitMs = fc.constantFrom(0, 1000, 1000, 1000);
const shared = fc.constantFrom<'shared' | undefined>(undefined, undefined, undefined, 'shared');

const cmdArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('openSession' as const), sessionId: sid, ttlMs: fc.constant(10_000), owner: fc.constant(''), lockDelayMs: fc.constantFrom(0, 0, 3000) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('closeSession' as const), sessionId: sid }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expireSession' as const), sessionId: sid }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('acquire' as const), name, sessionId: sid, waitMs, mode: shared, maxHoldMs: maybe(fc.constant(5000), 5) }).map(compact) },
  { weight: 7, arbitrary: fc.record({ kind: fc.constant('acquireAll' as const), names, sessionId: sid, waitMs, mode: shared, maxHoldMs: maybe(fc.constant(5000), 5) }).map(compact) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('campaign' as const), name, sessionId: sid, value: fc.constant('v'), waitMs }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), name, sessionId: sid }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('releaseAll' as const), names, sessionId: sid }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancelWait' as const), name, sessionId: sid }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('endLockDelay' as const), name }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('revoke' as const), target: fc.constant('lock' as const), name, sessionId: maybe(sid, 1) }).map(compact) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expireHold' as const), target: fc.constant('lock' as const), name, sessionId: sid, fencingToken: fc.integer({ min: 1, max: 200 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('semAcquire' as const), name: fc.constantFrom('p', 'a'), sessionId: sid, limit: fc.constant(2), permits: fc.integer({ min: 1, max: 2 }), waitMs }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('semRelease' as const), name: fc.constantFrom('p', 'a'), sessionId: sid }) },
);
const stepArb = fc.record({ cmd: cmdArb, key: maybe(fc.constantFrom('k0', 'k1', 'k2'), 6) }).map(compact);

/** the request a deadlock answer refused, as the checkers name it */
function refusedWait(fsm: LockFsm, cmd: Command): NewWait {
  switch (cmd.kind) {
    case 'acquire': return { target: 'lock', names: [cmd.name], shared: cmd.mode === 'shared' };
    case 'campaign': return { target: 'lock', names: [cmd.name], shared: false };
    case 'semAcquire': return { target: 'semaphore', name: cmd.name };
    case 'acquireAll': {
      // the names it would have queued for: those its session did not hold
      const held = new Set(fsm.getSession(cmd.sessionId)?.locks ?? []);
      return { target: 'lock', names: cmd.names.filter((n) => !held.has(n)), shared: cmd.mode === 'shared' };
    }
    default: throw new Error(`deadlock answered to ${cmd.kind}`);
  }
}

/** the state a refusal must leave as it was: everything but the applied index and the key table */
function stateOf(fsm: LockFsm): Uint8Array {
  const { sessions, locks, sems, elections, maxHold, sets, lastToken } = exportState(fsm);
  return encode({ sessions, locks, sems, elections, maxHold, sets, lastToken });
}

function checkStep(fsm: LockFsm, cmd: Command, got: ApplyOutput, before: { sets: { sid: string; since: number; places: string[] }[]; state: Uint8Array; maxToken: { v: number } }, i: number): void {
  assertFsmInvariants(fsm);
  if (got.replayed) return;
  const r = got.result;
  if (!r.ok && r.code === 'deadlock') {
    assert.deepEqual(Buffer.from(stateOf(fsm)), Buffer.from(before.state), `step ${i}: a deadlock refusal changed the state`);
    const req = refusedWait(fsm, cmd);
    assert.equal(r.cycle[0]?.sessionId, (cmd as { sessionId: string }).sessionId, `step ${i}: the cycle does not start with the refused request's session`);
    assert.equal(checkDeadlockAnswer(fsm, req, r.cycle), null, `step ${i}: deadlock answer ${JSON.stringify(r.cycle)} names no real cycle`);
    assert.deepEqual(wouldDeadlock(fsm, r.cycle[0]?.sessionId ?? '', req), r.cycle, `step ${i}: the checkers' walk disagrees`);
  }
  if (r.ok && r.kind === 'acquired_all') {
    assert.deepEqual(r.grants.map((g) => g.name), (cmd as { names: string[] }).names, `step ${i}: grants not in the request's order`);
    for (const g of r.grants) assert.ok(fsm.check(g.name, g.fencingToken), `step ${i}: acquired_all answered ${g.name} with token ${g.fencingToken}, which does not hold it`);
  }
  const granted = new Map<string, Set<string>>(); // session → names granted in this apply
  for (const e of got.events) {
    if (e.type === 'granted' || e.type === 'semGranted') {
      assert.ok(e.fencingToken > before.maxToken.v, `step ${i}: token ${e.fencingToken} not above ${before.maxToken.v}`);
      before.maxToken.v = e.fencingToken;
    }
    if (e.type === 'granted') {
      const m = granted.get(e.sessionId) ?? new Set<string>();
      m.add(e.name);
      granted.set(e.sessionId, m);
    }
    if (e.type === 'setGranted') {
      for (const g of e.grants) assert.ok(fsm.check(g.name, g.fencingToken), `step ${i}: setGranted names ${g.name}/${g.fencingToken}, not held`);
      assert.equal(fsm.getSession(e.sessionId)?.locks.filter((n) => e.grants.some((g) => g.name === n)).length, e.grants.length, `step ${i}: a granted set is not wholly held by its session`);
    }
  }
  // the places of every set that waited before this apply: all granted, or none
  for (const set of before.sets) {
    const mine = granted.get(set.sid) ?? new Set<string>();
    const got_ = set.places.filter((n) => mine.has(n)).length;
    const announced = got.events.some((e) => e.type === 'setGranted' && e.sessionId === set.sid && e.since === set.since);
    if (got_ === 0) assert.ok(!announced, `step ${i}: set ${set.sid}@${set.since} announced without grants`);
    else {
      assert.equal(got_, set.places.length, `step ${i}: set ${set.sid}@${set.since} partly granted: ${[...mine].join(',')} of ${set.places.join(',')}`);
      assert.ok(announced, `step ${i}: set ${set.sid}@${set.since} granted without setGranted`);
    }
  }
}

type Step = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

const counts = { deadlocks: 0, setGrants: 0, setsQueued: 0 };

/** the property, over the FSM built with `opts` (a mutation, or none) */
function lockSetsProperty(opts: { testEndWaitsOneByOne?: boolean }): fc.IPropertyWithHooks<[Step[], number]> {
  return fc.property(fc.array(stepArb, { minLength: 1, maxLength: 150, size: 'max' }), fc.nat(), (steps, cutSeed) => {
    const fsm = new LockFsm({ maxWaitersPerLock: 100, ...opts });
    const model = new LockModel({ maxWaitersPerLock: 100 });
    const cut = cutSeed % steps.length;
    let copy: LockFsm | null = null;
    const maxToken = { v: 0 };
    steps.forEach((st, i) => {
      const env = st.key === undefined ? { atMs: 1000 * (i + 1), cmd: st.cmd } : { atMs: 1000 * (i + 1), idempotencyKey: st.key, cmd: st.cmd };
      const before = {
        sets: [...fsm.core.lockSets].map((s) => ({ sid: s.session.id, since: s.since, places: s.members.map((m) => m.lock.name) })),
        state: stateOf(fsm),
        maxToken,
      };
      const got = fsm.apply(i + 1, env);
      assert.deepEqual(got, model.apply(i + 1, env), `step ${i + 1}: the model answers otherwise: ${JSON.stringify(env)}`);
      assert.deepEqual(exportState(fsm), model.export(), `step ${i + 1}: the model's state differs`);
      if (!got.result.ok && got.result.code === 'deadlock') counts.deadlocks++;
      if (got.result.ok && got.result.kind === 'queued_all') counts.setsQueued++;
      counts.setGrants += got.events.filter((e) => e.type === 'setGranted').length;
      checkStep(fsm, st.cmd, got, before, i + 1);
      if (copy !== null) assert.deepEqual(copy.apply(i + 1, env), got, `step ${i + 1}: the restored copy answers otherwise`);
      if (i === cut) copy = LockFsm.fromSnapshot(fsm.snapshot(encode), decode, { maxWaitersPerLock: 100 });
    });
    const c = copy as LockFsm | null;
    if (c !== null) assert.deepEqual(Buffer.from(c.snapshot(encode)), Buffer.from(fsm.snapshot(encode)), 'the restored copy ended in other bytes');
  });
}

test('lock sets: never partly held, deadlock answers name real cycles, no cycle persists, tokens increase, snapshots replay alike', () => {
  fc.assert(lockSetsProperty({}), { seed, numRuns: runs });
  // the generator must reach what it is meant to test
  const { deadlocks, setGrants, setsQueued } = counts;
  assert.ok(deadlocks > 0 && setGrants > 0 && setsQueued > 0, `deadlocks ${deadlocks}, sets queued ${setsQueued}, sets granted later ${setGrants}`);
  console.log(`# ${deadlocks} deadlock answers, ${setsQueued} sets queued, ${setGrants} granted later`);
});

// A row of the mutation table (docs/simulation-lock.md). The generator reaches two waits of
// one session ending together (with a queue served between them) after 67 to 2,053 runs
// for seeds 1–8, none in 3,000 for seed 9; so the row names seeds that reach it quickly
// (1: 67 runs, 3: 112), as sim-lock's rows do: each fails with the mutation on and
// passes, over the same runs, with it off.
test('mutation: waits that end together ending one at a time (testEndWaitsOneByOne): FSM_SEED=1 and 3 fail with it on and pass with it off', () => {
  for (const s of [1, 3]) {
    const on = fc.check(lockSetsProperty({ testEndWaitsOneByOne: true }), { seed: s, numRuns: 3000, endOnFailure: true });
    assert.equal(on.failed, true, `FSM_SEED=${s}: the property should fail with the waits ended one by one`);
    const off = fc.check(lockSetsProperty({}), { seed: s, numRuns: on.numRuns });
    assert.equal(off.failed, false, `FSM_SEED=${s}: the property fails with the fix on too: ${off.counterexample === null ? '' : JSON.stringify(off.counterexample).slice(0, 400)}`);
  }
});
