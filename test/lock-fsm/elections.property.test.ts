// Property tests of elections (docs/lock-fsm.md "Elections"): random sequences of
// campaigns, proclaims, resigns, plain acquires and releases of the same names, session
// ends and the lessor's wait cancels, against the reference model (test/model/lock-model.ts,
// which models an election as the exclusive lock it is, with a value). After EVERY
// command: same result and events as the model, same lock, queue and election views, the
// FSM's own invariants, and, checked directly: at most one leader per name (the leader is
// the lock's only holder); grants follow FIFO (the grantees are the head of the queue);
// tokens strictly increase; the leader's value is the last one proclaimed under its grant
// (or its campaign's, before any proclaim). Plus: a snapshot taken at any point and
// restored elsewhere, then fed the rest of the log, ends in identical bytes.
//
// Replay a failure: FSM_SEED=<seed printed below> node --test dist/test/lock-fsm/elections.property.test.js
// (FSM_RUNS=N changes the run count).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Command } from '../../src/lock-fsm/index.js';
import { LOCK_QUEUE, assertMatchesModel, checkFifo, compact, maybe, sessionCommands, stepsOf } from './model-property.js';
import { testSeed } from '../support/seed.js';

const runs = Number(process.env['FSM_RUNS'] ?? 150);
const seed = testSeed('FSM_SEED', { what: `election property tests, ${runs} runs`, replay: 'node --test dist/test/lock-fsm/elections.property.test.js' });

const SIDS = ['s0', 's1', 's2', 's3'];
const NAMES = ['e', 'f'];
const sid = fc.constantFrom(...SIDS);
const name = fc.constantFrom(...NAMES);
const waitMs = fc.constantFrom(0, 1000, 1000);
const since = fc.integer({ min: 1, max: 120 });
// values: empty, short, multi-byte UTF-8, and exactly 4 KiB of bytes
const value = fc.constantFrom('', 'v1', 'v2', 'ünïcødé', 'x'.repeat(4096), '€'.repeat(1365));

const cmdArb: fc.Arbitrary<Command> = fc.oneof(
  ...sessionCommands(sid),
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('campaign' as const), name, sessionId: sid, value, waitMs }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('proclaim' as const), name, sessionId: sid, value }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('resign' as const), name, sessionId: sid }) },
  // a name is not both a lock and an election, but nothing stops a caller mixing them
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('acquire' as const), name, sessionId: sid, waitMs, mode: fc.constantFrom<'shared' | undefined>('shared', undefined) }).map(compact) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), name, sessionId: sid, fencingToken: maybe(fc.integer({ min: 1, max: 120 }), 4) }).map(compact) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancelWait' as const), name, sessionId: sid, since: maybe(since, 2) }).map(compact) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('endLockDelay' as const), name, since: maybe(since, 2) }).map(compact) },
);

test('elections: FSM ≡ reference model; one leader per name, FIFO, increasing tokens, last proclaimed value, at every index', () => {
  assertMatchesModel(stepsOf(cmdArb), { seed, runs }, () => {
    let maxToken = 0;
    const valueOf = new Map<number, string>(); // an election grant's token → its value now, from the events alone
    return {
      before: (fsm) => new Map(NAMES.map((n) => [n, fsm.lockQueue(n).map((w) => w.sessionId)])),
      after: ({ fsm, model, env, i, got, before: queues }) => {
        checkFifo(LOCK_QUEUE, NAMES, queues, env.cmd, got.events);
        for (const e of got.events) {
          if (e.type === 'granted') {
            assert.ok(e.fencingToken > maxToken, `token ${e.fencingToken} not above ${maxToken}`);
            maxToken = e.fencingToken;
            if (e.value !== undefined) valueOf.set(e.fencingToken, e.value);
          } else if (e.type === 'proclaimed') {
            assert.ok(valueOf.has(e.fencingToken), `proclaim under token ${e.fencingToken}, which no campaign won`);
            valueOf.set(e.fencingToken, e.value);
          }
        }
        for (const n of NAMES) {
          const el = fsm.getElection(n);
          assert.deepEqual(el, model.electionView(n), `election ${n} after step ${i}`);
          assert.deepEqual(fsm.getLock(n), model.lockView(n), `lock ${n} after step ${i}`);
          assert.deepEqual(fsm.lockQueue(n), model.queueView(n), `queue of ${n} after step ${i}`);
          if (el.leader !== null) {
            const holders = fsm.getLock(n).holders ?? [];
            assert.equal(holders.length, 1, `election ${n}: the leader beside another holder`);
            assert.equal(holders[0]!.sessionId, el.leader.sessionId, `election ${n}: leader is not the lock's holder`);
            assert.equal(el.leader.value, valueOf.get(el.leader.fencingToken), `election ${n}: value is not the last proclaimed`);
          }
        }
      },
    };
  });
});
