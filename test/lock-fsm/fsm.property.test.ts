// Property tests: random command sequences against the reference model (test/model/lock-model.ts).
// After EVERY command: same result, same events, same exported state; the FSM's own
// invariants hold (≤1 holder, live sessions, linked structures); tokens strictly
// increase; grants follow FIFO and never happen during lock-delay. Plus: a snapshot taken
// at any point and restored elsewhere, then fed the rest of the log, ends in the same
// state with identical bytes.
//
// Replay a failure: FSM_SEED=<seed printed below> node --import tsx --test test/lock-fsm/fsm.property.test.ts
// (fast-check also prints the counterexample path; FSM_RUNS=N changes the run count).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { LockFsm, assertFsmInvariants, exportState, type Command, type Envelope, type FsmEvent, type KeyBinding } from '../../src/lock-fsm/index.js';
import type { StateV1 } from '../../src/lock-fsm/snapshot.js';
import { LockModel, type ModelLimits } from '../model/lock-model.js';
import { compact, maybe } from './model-property.js';
import { bindingArb, envelopeOf } from '../model/model-keys.js';
import { testSeed } from '../support/seed.js';

const packr = new Packr({ useRecords: false, structuredClone: false, moreTypes: false, bundleStrings: false });
const encode = (v: unknown): Uint8Array => packr.pack(v);
const decode = (b: Uint8Array): unknown => packr.unpack(b);

const runs = Number(process.env['FSM_RUNS'] ?? 250);
const seed = testSeed('FSM_SEED', { what: `lock-fsm property tests, ${runs} runs`, replay: 'node --test dist/test/lock-fsm/fsm.property.test.js' });

const sid = fc.constantFrom('s0', 's1', 's2', 's3');
const name = fc.constantFrom('a', 'b', 'c', 'a/x');
const owner = fc.constantFrom('', 'alice', 'bøb');
const waitMs = fc.constantFrom(0, 1000, 1000, 30000);

const newSessionArb = fc.record({ ttlMs: fc.integer({ min: 1, max: 60000 }), owner, lockDelayMs: fc.constantFrom(0, 3000) });
const cmdArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('openSession' as const), sessionId: sid, ttlMs: fc.integer({ min: 1, max: 60000 }), owner, lockDelayMs: fc.constantFrom(0, 0, 5000) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('closeSession' as const), sessionId: sid }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expireSession' as const), sessionId: sid }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('acquire' as const), name, sessionId: sid, waitMs, owner: maybe(owner, 2), newSession: maybe(newSessionArb, 8) }).map(compact) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), name, sessionId: sid, fencingToken: maybe(fc.integer({ min: 1, max: 80 }), 3) }).map(compact) },
  // since: absent (legacy: the current item), or an index that may or may not name it
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancelWait' as const), name, sessionId: sid, since: maybe(fc.integer({ min: 1, max: 80 }), 2) }).map(compact) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('endLockDelay' as const), name, since: maybe(fc.integer({ min: 1, max: 80 }), 2) }).map(compact) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('barrier' as const), term: fc.nat(5) }) },
);

interface Step { cmd: Command; key?: string; binding?: KeyBinding; dtMs: number; dIndex: number }
const stepArb: fc.Arbitrary<Step> = fc.record({
  cmd: cmdArb,
  key: maybe(fc.constantFrom('k0', 'k1', 'k2', 'k3', 'k4', 'k5'), 6),
  // what the key is bound to: a few requests, or none (an entry of a version before bindings)
  binding: bindingArb,
  // mostly forward, sometimes a lagging leader clock, sometimes past the idempotency TTL
  dtMs: fc.oneof({ weight: 12, arbitrary: fc.integer({ min: 0, max: 5000 }) }, { weight: 1, arbitrary: fc.integer({ min: -20000, max: 0 }) }, { weight: 1, arbitrary: fc.integer({ min: 300000, max: 700000 }) }),
  dIndex: fc.integer({ min: 1, max: 3 }),
}).map(compact);

const limitsArb: fc.Arbitrary<Required<ModelLimits>> = fc.record({
  maxSessions: fc.constantFrom(3, 100, 100),
  maxWaitersPerLock: fc.constantFrom(2, 100, 100),
  idempotencyTtlMs: fc.constant(600_000),
  idempotencyMaxKeys: fc.constantFrom(2, 100),
});

function envelopes(steps: readonly Step[]): { index: number; env: Envelope }[] {
  let index = 0, at = 1_000_000;
  return steps.map((s) => {
    index += s.dIndex;
    at = Math.max(0, at + s.dtMs);
    return { index, env: envelopeOf(at, s) };
  });
}

/** FIFO and lock-delay, checked directly against the state before the apply */
function checkGrants(before: StateV1, cmd: Command, events: readonly FsmEvent[], maxToken: { v: number }): void {
  for (const e of events) {
    if (e.type !== 'granted') continue;
    assert.ok(e.fencingToken > maxToken.v, `token ${e.fencingToken} not above ${maxToken.v}`);
    maxToken.v = e.fencingToken;
    const row = before.locks.find((l) => l[0] === e.name);
    if (row === undefined) continue; // a fresh lock: nobody waited
    const [, holder, , , delayMs, queue] = row;
    if (delayMs > 0) assert.ok(cmd.kind === 'endLockDelay' && cmd.name === e.name, `grant of ${e.name} during lock-delay`);
    const waiters = queue.filter((w) => !events.some((x) => x.type === 'waitEnded' && x.name === e.name && x.sessionId === w[0]));
    if (holder !== null || delayMs > 0 || waiters.length > 0) {
      assert.equal(e.sessionId, waiters[0]?.[0], `grant of ${e.name} skipped the head of its queue`);
    }
  }
}

test('random command sequences: FSM ≡ reference model, invariants hold, snapshots replay identically', () => {
  fc.assert(
    fc.property(limitsArb, fc.array(stepArb, { minLength: 1, maxLength: 120, size: 'max' }), fc.nat(), (lim, steps, cutSeed) => {
      const fsm = new LockFsm(lim);
      const model = new LockModel(lim);
      const log = envelopes(steps);
      const cut = cutSeed % (log.length + 1);
      let restored: LockFsm | null = cut === 0 ? LockFsm.fromSnapshot(fsm.snapshot(encode), decode, lim) : null;
      const maxToken = { v: 0 };
      log.forEach(({ index, env }, i) => {
        const before = exportState(fsm);
        const got = fsm.apply(index, env);
        const want = model.apply(index, env);
        assert.deepEqual(got, want, `step ${i} ${JSON.stringify(env)}`);
        assertFsmInvariants(fsm);
        assert.deepEqual(exportState(fsm), model.export(), `state after step ${i}`);
        checkGrants(before, env.cmd, got.events, maxToken);
        if (restored !== null) {
          assert.deepEqual(restored.apply(index, env), got, `restored replica diverged at step ${i}`);
        }
        if (i + 1 === cut) restored = LockFsm.fromSnapshot(fsm.snapshot(encode), decode, lim);
      });
      assert.ok(restored !== null);
      assertFsmInvariants(restored);
      assert.deepEqual(Buffer.from(restored.snapshot(encode)), Buffer.from(fsm.snapshot(encode)), 'snapshot bytes differ after replay');
    }),
    { seed, numRuns: runs },
  );
});
