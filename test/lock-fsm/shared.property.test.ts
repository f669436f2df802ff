// Property tests of shared locks and semaphores: random command sequences against the
// reference model (shared-model.ts). After EVERY command: same result and events as the
// model, same views of every lock and semaphore, the FSM's own invariants, and, checked
// directly: no exclusive holder beside any other holder; for every semaphore holder, the
// permits held by it and every holder granted before it ≤ the limit in force when it was
// granted; grants follow FIFO (grantees are the head of the queue, in order); tokens
// strictly increase. Plus: a snapshot taken at any point and restored elsewhere, then fed
// the rest of the log, ends in identical bytes.
//
// Replay a failure: FSM_SEED=<seed printed below> node --import tsx --test test/lock-fsm/shared.property.test.ts
// (FSM_RUNS=N changes the run count).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LockFsm, assertFsmInvariants, type Command, type Envelope, type FsmEvent } from '../../src/lock-fsm/index.js';
import { SharedModel } from './shared-model.js';
import { decode, encode } from './helpers.js';

const seed = process.env['FSM_SEED'] !== undefined ? Number(process.env['FSM_SEED']) : (Date.now() ^ (process.pid << 8)) >>> 0;
const runs = Number(process.env['FSM_RUNS'] ?? 200);
console.log(`shared-lock/semaphore property tests: seed=${seed} runs=${runs} (replay: FSM_SEED=${seed})`);

const SIDS = ['s0', 's1', 's2', 's3', 's4'];
const NAMES = ['a', 'b'];
const sid = fc.constantFrom(...SIDS);
const name = fc.constantFrom(...NAMES);
const waitMs = fc.constantFrom(0, 1000, 1000);
const since = fc.integer({ min: 1, max: 120 });

function maybe<T>(arb: fc.Arbitrary<T>, absentWeight: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: absentWeight, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
}
function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const cmdArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('openSession' as const), sessionId: sid, ttlMs: fc.constant(10_000), owner: fc.constantFrom('', 'o'), lockDelayMs: fc.constantFrom(0, 0, 3000) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('closeSession' as const), sessionId: sid }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expireSession' as const), sessionId: sid }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('acquire' as const), name, sessionId: sid, waitMs, mode: fc.constantFrom<'shared' | undefined>('shared', 'shared', undefined) }).map(compact) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), name, sessionId: sid, fencingToken: maybe(fc.integer({ min: 1, max: 120 }), 4) }).map(compact) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancelWait' as const), name, sessionId: sid, since: maybe(since, 2) }).map(compact) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('endLockDelay' as const), name, since: maybe(since, 2) }).map(compact) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('semAcquire' as const), name, sessionId: sid, limit: fc.constantFrom(3, 3, 4), permits: fc.integer({ min: 1, max: 4 }), waitMs }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('semRelease' as const), name, sessionId: sid }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('semSetLimit' as const), name, limit: fc.integer({ min: 1, max: 5 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('semCancelWait' as const), name, sessionId: sid, since }) },
);

interface Step { cmd: Command; key?: string }
const stepArb: fc.Arbitrary<Step> = fc.record({ cmd: cmdArb, key: maybe(fc.constantFrom('k0', 'k1', 'k2', 'k3'), 6) }).map(compact);

/** Grants of one apply, per name, must be the head of the queue before it, in order
 *  (skipping requests this apply ended), or the acquirer itself when nobody waited. */
function checkFifo(kind: 'lock' | 'sem', before: Map<string, string[]>, cmd: Command, events: readonly FsmEvent[]): void {
  for (const n of NAMES) {
    const grants = events.filter((e) => (kind === 'lock' ? e.type === 'granted' : e.type === 'semGranted') && 'name' in e && e.name === n).map((e) => (e as { sessionId: string }).sessionId);
    const ended = new Set(events.filter((e) => (kind === 'lock' ? e.type === 'waitEnded' : e.type === 'semWaitEnded') && 'name' in e && e.name === n).map((e) => (e as { sessionId: string }).sessionId));
    const queue = (before.get(n) ?? []).filter((s) => !ended.has(s));
    const isAcquire = (kind === 'lock' ? cmd.kind === 'acquire' : cmd.kind === 'semAcquire') && 'name' in cmd && cmd.name === n;
    if (isAcquire && grants.length === 1 && !queue.includes(grants[0]!)) {
      assert.equal(queue.length, 0, `${kind} ${n}: ${grants[0]} granted past a non-empty queue`);
      continue;
    }
    assert.deepEqual(grants, queue.slice(0, grants.length), `${kind} ${n}: grants ${grants.join(',')} are not the head of the queue ${queue.join(',')}`);
  }
}

test('shared locks and semaphores: FSM ≡ reference model; exclusion, permit, FIFO and token invariants at every index', () => {
  fc.assert(
    fc.property(fc.constantFrom(2, 100), fc.array(stepArb, { minLength: 1, maxLength: 100, size: 'max' }), fc.nat(), (maxWaiters, steps, cutSeed) => {
      const opts = { maxWaitersPerLock: maxWaiters };
      const fsm = new LockFsm(opts);
      const model = new SharedModel(maxWaiters);
      const log: { index: number; env: Envelope }[] = steps.map((s, i) => ({ index: i + 1, env: s.key === undefined ? { atMs: 1000, cmd: s.cmd } : { atMs: 1000, idempotencyKey: s.key, cmd: s.cmd } }));
      const cut = cutSeed % (log.length + 1);
      let restored: LockFsm | null = cut === 0 ? LockFsm.fromSnapshot(fsm.snapshot(encode), decode, opts) : null;
      let maxToken = 0;
      const limitAtGrant = new Map<number, number>(); // semaphore token → limit in force at its grant
      log.forEach(({ index, env }, i) => {
        const lockQ = new Map(NAMES.map((n) => [n, fsm.lockQueue(n).map((w) => w.sessionId)]));
        const semQ = new Map(NAMES.map((n) => [n, fsm.getSemaphore(n).waiters.map((w) => w.sessionId)]));
        const got = fsm.apply(index, env);
        const want = model.apply(index, env);
        assert.deepEqual(got, want, `step ${i} ${JSON.stringify(env)}`);
        assertFsmInvariants(fsm);
        for (const n of NAMES) {
          const l = fsm.getLock(n);
          assert.deepEqual(l, model.lockView(n), `lock ${n} after step ${i}`);
          assert.deepEqual(fsm.lockQueue(n), model.queueView(n), `queue of lock ${n} after step ${i}`);
          assert.deepEqual(fsm.getSemaphore(n), model.semView(n), `semaphore ${n} after step ${i}`);
          const hs = l.holders ?? [];
          if (hs.some((h) => h.mode === 'exclusive')) assert.equal(hs.length, 1, `lock ${n}: an exclusive holder beside another holder`);
        }
        checkFifo('lock', lockQ, env.cmd, got.events);
        checkFifo('sem', semQ, env.cmd, got.events);
        if (!got.replayed) {
          for (const e of got.events) {
            if (e.type !== 'granted' && e.type !== 'semGranted') continue;
            assert.ok(e.fencingToken > maxToken, `token ${e.fencingToken} not above ${maxToken}`);
            maxToken = e.fencingToken;
            if (e.type === 'semGranted') limitAtGrant.set(e.fencingToken, e.limit);
          }
        }
        for (const n of NAMES) {
          let sum = 0;
          for (const h of fsm.getSemaphore(n).holders) { // in grant (token) order
            sum += h.permits;
            const lim = limitAtGrant.get(h.fencingToken);
            assert.ok(lim !== undefined && sum <= lim, `semaphore ${n}: ${sum} permits held through token ${h.fencingToken}, over the limit ${lim} it was granted under`);
          }
        }
        if (restored !== null) assert.deepEqual(restored.apply(index, env), got, `restored replica diverged at step ${i}`);
        if (i + 1 === cut) restored = LockFsm.fromSnapshot(fsm.snapshot(encode), decode, opts);
      });
      assert.ok(restored !== null);
      assertFsmInvariants(restored);
      assert.deepEqual(Buffer.from(restored.snapshot(encode)), Buffer.from(fsm.snapshot(encode)), 'snapshot bytes differ after replay');
    }),
    { seed, numRuns: runs },
  );
});
