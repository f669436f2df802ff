// The frame of the property tests that run random command sequences against the reference
// model (test/model/lock-model.ts): elections.property.test.ts and shared.property.test.ts. One
// run applies every step to the FSM and to the model and checks, after EVERY command,
// the same result and events, the same exported (snapshot) state and the FSM's own
// invariants; the test adds its own checks
// per step. A snapshot taken at a random point and restored elsewhere, then fed the rest
// of the log, must end in identical bytes.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LockFsm, assertFsmInvariants, exportState, type ApplyOutput, type Command, type Envelope, type FsmEvent, type KeyBinding } from '../../src/lock-fsm/index.js';
import { LockModel } from '../model/lock-model.js';
import { decode, encode } from './helpers.js';
import { bindingArb, envelopeOf } from '../model/model-keys.js';

/** an optional field present with probability 1/(1+absentWeight) */
export function maybe<T>(arb: fc.Arbitrary<T>, absentWeight: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: absentWeight, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
}

/** drops undefined fields: the FSM distinguishes absent from present */
export function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** opening, closing and expiring sessions, weighted 4 : 1 : 1 */
export function sessionCommands(sid: fc.Arbitrary<string>): fc.WeightedArbitrary<Command>[] {
  return [
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('openSession' as const), sessionId: sid, ttlMs: fc.constant(10_000), owner: fc.constantFrom('', 'o'), lockDelayMs: fc.constantFrom(0, 0, 3000) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('closeSession' as const), sessionId: sid }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('expireSession' as const), sessionId: sid }) },
  ];
}

export interface Step { cmd: Command; key?: string; binding?: KeyBinding }

/** a command, with an Idempotency-Key from a small set one time in seven, bound to one of
 *  a few requests (model-keys.ts) */
export function stepsOf(cmd: fc.Arbitrary<Command>): fc.Arbitrary<Step> {
  return fc.record({ cmd, key: maybe(fc.constantFrom('k0', 'k1', 'k2', 'k3'), 6), binding: bindingArb }).map(compact);
}

/** a FIFO queue's events and requests: a lock's (acquires and campaigns) or a semaphore's */
export interface QueueKind {
  label: string;
  granted: FsmEvent['type'];
  ended: FsmEvent['type'];
  asks: readonly Command['kind'][];
}
export const LOCK_QUEUE: QueueKind = { label: 'lock', granted: 'granted', ended: 'waitEnded', asks: ['acquire', 'campaign'] };
export const SEMAPHORE_QUEUE: QueueKind = { label: 'sem', granted: 'semGranted', ended: 'semWaitEnded', asks: ['semAcquire'] };

/** Grants of one apply, per name, are the head of the queue before it, in order (skipping
 *  requests this apply ended), or the requester itself when nobody waited. */
export function checkFifo(q: QueueKind, names: readonly string[], before: Map<string, string[]>, cmd: Command, events: readonly FsmEvent[]): void {
  const sessionsOf = (type: FsmEvent['type'], n: string): string[] =>
    events.filter((e) => e.type === type && 'name' in e && e.name === n).map((e) => (e as { sessionId: string }).sessionId);
  for (const n of names) {
    const grants = sessionsOf(q.granted, n);
    const ended = new Set(sessionsOf(q.ended, n));
    const queue = (before.get(n) ?? []).filter((s) => !ended.has(s));
    const asks = q.asks.includes(cmd.kind) && 'name' in cmd && cmd.name === n;
    if (asks && grants.length === 1 && !queue.includes(grants[0]!)) {
      assert.equal(queue.length, 0, `${q.label} ${n}: ${grants[0]} granted past a non-empty queue`);
      continue;
    }
    assert.deepEqual(grants, queue.slice(0, grants.length), `${q.label} ${n}: grants ${grants.join(',')} are not the head of the queue ${queue.join(',')}`);
  }
}

/** what a test checks per step; made afresh for every run (it may keep state across steps) */
export interface StepCheck<B> {
  /** read before the step applies (e.g. the queues) */
  before(fsm: LockFsm): B;
  /** after the FSM and the model applied step `i` alike and the FSM's invariants held */
  after(s: { fsm: LockFsm; model: LockModel; env: Envelope; i: number; got: ApplyOutput; before: B }): void;
}

/** fc.assert over random runs (max waiters 2 or 100, 1 to 100 steps, a random cut for the snapshot) */
export function assertMatchesModel<B>(steps: fc.Arbitrary<Step>, o: { seed: number; runs: number }, check: () => StepCheck<B>): void {
  fc.assert(
    fc.property(fc.constantFrom(2, 100), fc.array(steps, { minLength: 1, maxLength: 100, size: 'max' }), fc.nat(), (maxWaiters, run, cutSeed) => {
      const opts = { maxWaitersPerLock: maxWaiters };
      const fsm = new LockFsm(opts);
      const model = new LockModel({ maxWaitersPerLock: maxWaiters });
      const c = check();
      const log: { index: number; env: Envelope }[] = run.map((s, i) => ({ index: i + 1, env: envelopeOf(1000, s) }));
      const cut = cutSeed % (log.length + 1);
      let restored: LockFsm | null = cut === 0 ? LockFsm.fromSnapshot(fsm.snapshot(encode), decode, opts) : null;
      log.forEach(({ index, env }, i) => {
        const before = c.before(fsm);
        const got = fsm.apply(index, env);
        const want = model.apply(index, env);
        assert.deepEqual(got, want, `step ${i} ${JSON.stringify(env).slice(0, 300)}`);
        assertFsmInvariants(fsm);
        assert.deepEqual(exportState(fsm), model.export(), `state after step ${i}`);
        c.after({ fsm, model, env, i, got, before });
        if (restored !== null) assert.deepEqual(restored.apply(index, env), got, `restored replica diverged at step ${i}`);
        if (i + 1 === cut) restored = LockFsm.fromSnapshot(fsm.snapshot(encode), decode, opts);
      });
      assert.ok(restored !== null);
      assertFsmInvariants(restored);
      assert.deepEqual(Buffer.from(restored.snapshot(encode)), Buffer.from(fsm.snapshot(encode)), 'snapshot bytes differ after replay');
    }),
    { seed: o.seed, numRuns: o.runs },
  );
}
