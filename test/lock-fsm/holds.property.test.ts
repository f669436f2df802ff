// Property tests of revocation and max hold (docs/lock-fsm.md "Revocation and maximum
// hold"): random commands against the reference model (test/model/lock-model.ts), driven through
// the real Lessor as a leader would — every apply's events go to lessor.observe, "tick"
// steps apply what lessor.due proposes, "promote" steps change leader (the new lessor
// re-arms from the state), and stale copies of earlier expireHold proposals are applied
// again at random later points, as a re-proposal that commits late would be. Log time is
// the test clock (every entry is stamped with it). After EVERY apply: same result, events
// and max-hold grants as the model; invariants; tokens increase. And:
//  - after a revoke, the grants it names are gone; a waiter it lets in gets a larger token;
//  - never early: a grant freed by a lessor's expireHold (or a late copy of one) was made at
//    least max_hold_ms of log time before (a made-up expireHold naming the live token is
//    obeyed whenever it commits: timing is the lessor's, not the FSM's);
//  - never late: after a tick, no grant is held past its max hold (the lessor proposed it),
//    plus, across a leader change, the real time the log did not see before it.
// Plus: with the FSM's token check switched off (the testExpireHoldIgnoresToken mutation)
// the same property fails.
//
// Replay a failure: FSM_SEED=<seed printed below> node --test dist/test/lock-fsm/holds.property.test.js

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Lessor, LockFsm, assertFsmInvariants, exportState, type Command, type Envelope, type FsmEvent, type LockFsmOptions } from '../../src/lock-fsm/index.js';
import { LockModel } from '../model/lock-model.js';
import { decode, encode } from './helpers.js';
import { compact } from './model-property.js';
import { testSeed } from '../support/seed.js';

const runs = Number(process.env['FSM_RUNS'] ?? 100);
const seed = testSeed('FSM_SEED', { what: `revoke/max-hold property tests, ${runs} runs`, replay: 'node --test dist/test/lock-fsm/holds.property.test.js' });

const SIDS = ['s0', 's1', 's2', 's3'];
const NAMES = ['a', 'b'];
const sid = fc.constantFrom(...SIDS);
const name = fc.constantFrom(...NAMES);
const waitMs = fc.constantFrom(0, 1000, 1000);
const maxHold = fc.oneof({ weight: 1, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: fc.constantFrom(500, 2000, 5000) });
const target = fc.constantFrom<'lock' | 'semaphore'>('lock', 'semaphore');

type Step =
  | { t: 'cmd'; cmd: Command }
  /** advance the clock, then apply everything the lessor says is due */
  | { t: 'tick'; dtMs: number }
  /** a leader change: a fresh lessor takes office over the current state */
  | { t: 'promote'; dtMs: number }
  /** apply an earlier expireHold proposal again (a late duplicate) */
  | { t: 'stale'; pick: number };

const cmdArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('openSession' as const), sessionId: sid, ttlMs: fc.constant(600_000), owner: fc.constant(''), lockDelayMs: fc.constantFrom(0, 0, 300) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('closeSession' as const), sessionId: sid }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('acquire' as const), name, sessionId: sid, waitMs, mode: fc.constantFrom<'shared' | undefined>('shared', undefined, undefined), maxHoldMs: maxHold }).map(compact) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), name, sessionId: sid }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('endLockDelay' as const), name }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('semAcquire' as const), name, sessionId: sid, limit: fc.constant(3), permits: fc.integer({ min: 1, max: 3 }), waitMs, maxHoldMs: maxHold }).map(compact) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('semRelease' as const), name, sessionId: sid }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('revoke' as const), target, name, sessionId: fc.option(sid, { nil: undefined }) }).map(compact) },
  // a made-up expireHold: it names some token, which may or may not be that grant's
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expireHold' as const), target, name, sessionId: sid, fencingToken: fc.integer({ min: 1, max: 150 }) }) },
);

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: cmdArb.map((cmd): Step => ({ t: 'cmd', cmd })) },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 1500 }).map((dtMs): Step => ({ t: 'tick', dtMs })) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 1500 }).map((dtMs): Step => ({ t: 'promote', dtMs })) },
  { weight: 2, arbitrary: fc.nat().map((pick): Step => ({ t: 'stale', pick })) },
);

/** runs one history; throws on the first broken property */
function run(steps: readonly Step[], opts: LockFsmOptions): void {
  const fsm = new LockFsm(opts);
  const model = new LockModel({ maxWaitersPerLock: 100 });
  let lessor = new Lessor({ tickMs: 100, retryMs: 1000 });
  let now = 1_000_000;
  let index = 0;
  let maxToken = 0;
  const proposed: Command[] = []; // every expireHold the lessors proposed
  const slack = new Map<number, number>(); // token → how late a leader change may make it
  lessor.promote(now, fsm);
  const apply = (cmd: Command, what: string): FsmEvent[] => {
    const before = new Map(model.holdsView().map((h) => [h.fencingToken, h]));
    const env: Envelope = { atMs: now, cmd };
    index++;
    const got = fsm.apply(index, env);
    const want = model.apply(index, env);
    assert.deepEqual(got, want, `${what} #${index} ${JSON.stringify(cmd)}`);
    assertFsmInvariants(fsm);
    assert.deepEqual(fsm.grantsWithMaxHold(), model.holdsView(), `max-hold grants after #${index}`);
    for (const e of got.events) {
      if (e.type === 'granted' || e.type === 'semGranted') {
        assert.ok(e.fencingToken > maxToken, `token ${e.fencingToken} not above ${maxToken}`);
        maxToken = e.fencingToken;
      }
      if (e.type === 'revoked') assert.equal(fsm.holdsGrant(e.kind, e.name, e.sessionId, e.fencingToken), false, `revoked grant ${e.fencingToken} still held`);
      if (e.type === 'grantExpired') {
        const h = before.get(e.fencingToken);
        assert.ok(h !== undefined, `grant ${e.fencingToken} freed by max hold had none`);
        // timing is the lessor's (the FSM applies what the log says): a made-up expireHold
        // that happens to name the live grant's token may end it at any time (FSM_SEED=400947291)
        const madeUp = what === 'command' && cmd.kind === 'expireHold';
        if (!madeUp) assert.ok(h.grantedAtMs + h.maxHoldMs <= now, `grant ${e.fencingToken} freed by max hold early: made at ${h.grantedAtMs} + ${h.maxHoldMs} > ${now}`);
      }
    }
    lessor.observe(got.events, now);
    return got.events;
  };
  for (const st of steps) {
    switch (st.t) {
      case 'cmd': apply(st.cmd, 'command'); break;
      case 'stale':
        if (proposed.length > 0) apply(proposed[st.pick % proposed.length] as Command, 'late duplicate');
        break;
      case 'promote':
        now += st.dtMs;
        lessor = new Lessor({ tickMs: 100, retryMs: 1000 });
        // the new leader counts only the log time that passed: real time the log did not
        // see (here: since the last entry) is added to what is left, so it may be late
        // by that much, never early (Lessor.promote)
        for (const h of fsm.grantsWithMaxHold()) slack.set(h.fencingToken, now - fsm.logTimeMs);
        lessor.promote(now, fsm);
        apply({ kind: 'barrier', term: 1 }, 'barrier');
        break;
      case 'tick': {
        now += st.dtMs;
        for (const cmd of lessor.due(now, (t, n, s, tok) => fsm.holdsGrant(t, n, s, tok))) {
          if (cmd.kind === 'expireHold') proposed.push(cmd);
          apply(cmd, 'lessor');
        }
        for (const h of fsm.grantsWithMaxHold()) assert.ok(h.grantedAtMs + h.maxHoldMs + (slack.get(h.fencingToken) ?? 0) > now, `grant ${h.fencingToken} of ${h.name} held past its max hold: made at ${h.grantedAtMs} + ${h.maxHoldMs} <= ${now}`);
        break;
      }
    }
  }
  // a restored replica has the same max holds, byte for byte
  const copy = LockFsm.fromSnapshot(fsm.snapshot(encode), decode, opts);
  assert.deepEqual(copy.grantsWithMaxHold(), fsm.grantsWithMaxHold());
  assert.deepEqual(Buffer.from(copy.snapshot(encode)), Buffer.from(fsm.snapshot(encode)));
}

const history = fc.array(stepArb, { minLength: 1, maxLength: 120, size: 'max' });

test('revoke and max hold: FSM ≡ model through the lessor; revoked grants gone; max hold never early, never late; tokens increase', () => {
  fc.assert(fc.property(history, (steps) => run(steps, {})), { seed, numRuns: runs });
});

test('mutation: an expireHold that ignores its token (a late duplicate ends a later grant) is caught', () => {
  const r = fc.check(fc.property(history, (steps) => run(steps, { testExpireHoldIgnoresToken: true })), { seed, numRuns: 300 });
  assert.equal(r.failed, true, 'the property should fail with the token check off');
});

test('snapshots: version 2 (no max holds) still restores; a maxHold section is refused in a version 2 snapshot and checked against the state', () => {
  const fsm = new LockFsm();
  fsm.apply(1, { atMs: 5000, cmd: { kind: 'openSession', sessionId: 's1', ttlMs: 10_000, owner: '', lockDelayMs: 0 } });
  fsm.apply(2, { atMs: 5000, cmd: { kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 0 } });
  const plain = JSON.parse(JSON.stringify(exportState(fsm))) as Record<string, unknown>;
  assert.equal(plain['v'], 6); // versions 4–6 (key bindings, wait times, lock sets) keep version 3's maxHold rules
  assert.equal(plain['maxHold'], undefined, 'no section without max holds');
  const { elections, ...v2 } = plain; // version 3 also added the elections section (empty here)
  assert.deepEqual(elections, []);
  assert.deepEqual(exportState(LockFsm.fromState({ ...v2, v: 2 })), exportState(fsm), 'a version 2 snapshot restores');
  fsm.apply(3, { atMs: 6000, cmd: { kind: 'semAcquire', name: 'p', sessionId: 's1', limit: 2, permits: 1, waitMs: 0, maxHoldMs: 1000 } });
  const st = JSON.parse(JSON.stringify(exportState(fsm))) as Record<string, unknown>;
  assert.deepEqual(st['maxHold'], { grants: [['semaphore', 'p', 's1', 1000, 6000]], waits: [] });
  const { elections: _e, ...stV2 } = st;
  assert.throws(() => LockFsm.fromState({ ...stV2, v: 2 }), /maxHold is not a field of version 2/);
  assert.throws(() => LockFsm.fromState({ ...st, maxHold: { grants: [['lock', 'p', 's1', 1000, 6000]], waits: [] } }), /maxHold\.grants\[0\] names a grant of p that session s1 does not hold/);
  assert.throws(() => LockFsm.fromState({ ...st, maxHold: { grants: [['semaphore', 'p', 's1', 1000, 7000]], waits: [] } }), /maxHold\.grants\[0\]\[4\] must be a log time/);
  assert.deepEqual(LockFsm.fromState(st).grantsWithMaxHold(), fsm.grantsWithMaxHold());
});
