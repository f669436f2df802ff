// Property tests of shared locks and semaphores: random command sequences against the
// reference model (test/model/lock-model.ts). After EVERY command: same result and events as the
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
import type { Command } from '../../src/lock-fsm/index.js';
import { LOCK_QUEUE, SEMAPHORE_QUEUE, assertMatchesModel, checkFifo, compact, maybe, sessionCommands, stepsOf } from './model-property.js';
import { testSeed } from '../support/seed.js';

const runs = Number(process.env['FSM_RUNS'] ?? 200);
const seed = testSeed('FSM_SEED', { what: `shared-lock/semaphore property tests, ${runs} runs`, replay: 'node --test dist/test/lock-fsm/shared.property.test.js' });

const SIDS = ['s0', 's1', 's2', 's3', 's4'];
const NAMES = ['a', 'b'];
const sid = fc.constantFrom(...SIDS);
const name = fc.constantFrom(...NAMES);
const waitMs = fc.constantFrom(0, 1000, 1000);
const since = fc.integer({ min: 1, max: 120 });

const cmdArb: fc.Arbitrary<Command> = fc.oneof(
  ...sessionCommands(sid),
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('acquire' as const), name, sessionId: sid, waitMs, mode: fc.constantFrom<'shared' | undefined>('shared', 'shared', undefined) }).map(compact) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), name, sessionId: sid, fencingToken: maybe(fc.integer({ min: 1, max: 120 }), 4) }).map(compact) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancelWait' as const), name, sessionId: sid, since: maybe(since, 2) }).map(compact) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('endLockDelay' as const), name, since: maybe(since, 2) }).map(compact) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('semAcquire' as const), name, sessionId: sid, limit: fc.constantFrom(3, 3, 4), permits: fc.integer({ min: 1, max: 4 }), waitMs }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('semRelease' as const), name, sessionId: sid }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('semSetLimit' as const), name, limit: fc.integer({ min: 1, max: 5 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('semCancelWait' as const), name, sessionId: sid, since }) },
);

test('shared locks and semaphores: FSM ≡ reference model; exclusion, permit, FIFO and token invariants at every index', () => {
  assertMatchesModel(stepsOf(cmdArb), { seed, runs }, () => {
    let maxToken = 0;
    const limitAtGrant = new Map<number, number>(); // semaphore token → limit in force at its grant
    return {
      before: (fsm) => ({
        lockQ: new Map(NAMES.map((n) => [n, fsm.lockQueue(n).map((w) => w.sessionId)])),
        semQ: new Map(NAMES.map((n) => [n, fsm.getSemaphore(n).waiters.map((w) => w.sessionId)])),
      }),
      after: ({ fsm, model, env, i, got, before: { lockQ, semQ } }) => {
        for (const n of NAMES) {
          const l = fsm.getLock(n);
          assert.deepEqual(l, model.lockView(n), `lock ${n} after step ${i}`);
          assert.deepEqual(fsm.lockQueue(n), model.queueView(n), `queue of lock ${n} after step ${i}`);
          assert.deepEqual(fsm.getSemaphore(n), model.semView(n), `semaphore ${n} after step ${i}`);
          const hs = l.holders ?? [];
          if (hs.some((h) => h.mode === 'exclusive')) assert.equal(hs.length, 1, `lock ${n}: an exclusive holder beside another holder`);
        }
        checkFifo(LOCK_QUEUE, NAMES, lockQ, env.cmd, got.events);
        checkFifo(SEMAPHORE_QUEUE, NAMES, semQ, env.cmd, got.events);
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
      },
    };
  });
});
