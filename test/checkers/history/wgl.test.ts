// The linearizability checker on known-good and known-bad histories: a register (the
// classic textbook cases), then the lock model with sessions, expiry and info ops.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkOperations, type Model, type Operation } from './wgl.js';
import { checkLinearizable } from './linearizability.js';
import type { Op } from './history.js';
import { H } from './history-builder.js';

type RegIn = { f: 'w' | 'r'; v: number };
const register: Model<number, RegIn, number> = {
  init: () => 0,
  key: (s) => String(s),
  step: (s, i, o) => {
    if (i.f === 'w') return [i.v];
    if (o === undefined) return [s];
    return o === s ? [s] : [];
  },
};
const op = (f: 'w' | 'r', v: number, call: number, ret: number, out?: number): Operation<RegIn, number> => ({ input: { f, v }, output: f === 'r' ? out : undefined, call, ret });

test('register: sequential and overlapping histories that are linearizable', () => {
  assert.equal(checkOperations(register, []).result, 'ok');
  assert.equal(checkOperations(register, [op('w', 1, 0, 10), op('r', 0, 20, 30, 1)]).result, 'ok');
  // the read overlaps the write: it may see the old or the new value
  assert.equal(checkOperations(register, [op('w', 1, 0, 10), op('r', 0, 5, 15, 0)]).result, 'ok');
  assert.equal(checkOperations(register, [op('w', 1, 0, 10), op('r', 0, 5, 15, 1)]).result, 'ok');
  // two concurrent writes, then reads agreeing on one order
  assert.equal(checkOperations(register, [op('w', 1, 0, 10), op('w', 2, 0, 10), op('r', 0, 20, 21, 1), op('r', 0, 22, 23, 1)]).result, 'ok');
  // an info write (ret ∞) may take effect late
  assert.equal(checkOperations(register, [op('w', 7, 0, Infinity), op('r', 0, 5, 6, 0), op('r', 0, 50, 60, 7)]).result, 'ok');
});

test('register: histories that are not linearizable', () => {
  // a stale read after the write completed
  const stale = checkOperations(register, [op('w', 1, 0, 10), op('r', 0, 20, 30, 0)]);
  assert.equal(stale.result, 'illegal');
  if (stale.result === 'illegal') assert.equal(stale.stuckOp, 1);
  // two sequential reads disagree with any single order of the concurrent writes
  assert.equal(checkOperations(register, [op('w', 1, 0, 10), op('w', 2, 0, 10), op('r', 0, 20, 21, 1), op('r', 0, 22, 23, 2), op('r', 0, 24, 25, 1)]).result, 'illegal');
  // a value nobody wrote
  assert.equal(checkOperations(register, [op('w', 1, 0, 10), op('r', 0, 20, 30, 3)]).result, 'illegal');
});

test('register: a search budget gives unknown, not a hang', () => {
  const ops: Operation<RegIn, number>[] = [];
  for (let i = 0; i < 14; i++) ops.push(op('w', i + 1, 0, 100));
  ops.push(op('r', 0, 200, 201, 99));
  const r = checkOperations(register, ops, { maxSteps: 1000 });
  assert.equal(r.result, 'unknown');
});

// ---- the lock model over real-looking histories ------------------------------------

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);

function base(): H {
  return new H().add('c1', 'open', {}, 0, 'ok', { session: SA }, 1).add('c2', 'open', {}, 0, 'ok', { session: SB }, 1);
}

test('lock model: acquire, release, hand-over to a waiter, reads and checks are linearizable', () => {
  const h = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c2', 'acquire', { lock: 'L', session: SB, wait_ms: 1000 }, 11, 'ok', { token: 9 }, 40) // waits, granted on release
    .add('c3', 'read', { lock: 'L' }, 13, 'ok', { held: true, holder: SA, holder_token: 5 }, 14)
    .add('c3', 'check', { lock: 'L', token: 5 }, 15, 'ok', { current: true }, 16)
    .add('c1', 'release', { lock: 'L', session: SA, token: 5 }, 30, 'ok', {}, 35)
    .add('c3', 'check', { lock: 'L', token: 5 }, 50, 'ok', { current: false }, 51)
    .add('c1', 'acquire', { lock: 'L', session: SA }, 52, 'fail', { code: 'lock_held', holder: SB, holder_token: 9 }, 53)
    .add('c2', 'release', { lock: 'L', session: SB, token: 9 }, 60, 'ok', {}, 61)
    .add('c3', 'read', { lock: 'L' }, 62, 'ok', { held: false }, 63);
  const r = checkLinearizable(h.ops());
  assert.equal(r.valid, true, JSON.stringify(r));
});

test('lock model: two holders at once is caught', () => {
  const h = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c2', 'acquire', { lock: 'L', session: SB }, 20, 'ok', { token: 6 }, 22)
    .add('c1', 'keepalive', { session: SA }, 25, 'ok', {}, 26); // SA was alive: no expiry explains it
  const r = checkLinearizable(h.ops());
  assert.equal(r.valid, false);
  assert.match(r.perLock[0]!.detail!, /could not place/);
});

test('lock model: a grant after the holder expired is fine; the expiry window comes from the history', () => {
  const h = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c2', 'acquire', { lock: 'L', session: SB, wait_ms: 5000 }, 20, 'ok', { token: 6 }, 2500)
    .add('c1', 'keepalive', { session: SA }, 2600, 'fail', { code: 'session_not_found' }, 2601);
  assert.equal(checkLinearizable(h.ops()).valid, true);
  // …but the dead session cannot release afterwards
  const bad = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c1', 'keepalive', { session: SA }, 100, 'fail', { code: 'session_not_found' }, 101)
    .add('c1', 'release', { lock: 'L', session: SA, token: 5 }, 200, 'ok', {}, 201);
  assert.equal(checkLinearizable(bad.ops()).valid, false);
});

test('lock model: tokens must grow per lock; a read may not go back in time', () => {
  const lower = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c1', 'release', { lock: 'L', session: SA, token: 5 }, 20, 'ok', {}, 21)
    .add('c2', 'acquire', { lock: 'L', session: SB }, 30, 'ok', { token: 4 }, 31);
  assert.equal(checkLinearizable(lower.ops()).valid, false);
  const staleRead = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c1', 'release', { lock: 'L', session: SA, token: 5 }, 20, 'ok', {}, 21)
    .add('c3', 'read', { lock: 'L' }, 30, 'ok', { held: true, holder: SA, holder_token: 5 }, 31);
  assert.equal(checkLinearizable(staleRead.ops()).valid, false);
  const lostRelease = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c1', 'release', { lock: 'L', session: SA, token: 5 }, 20, 'ok', {}, 21)
    .add('c2', 'acquire', { lock: 'L', session: SB }, 30, 'fail', { code: 'lock_held', holder: SA, holder_token: 5 }, 31);
  assert.equal(checkLinearizable(lostRelease.ops()).valid, false);
});

test('lock model: info ops may or may not have happened, as in Jepsen', () => {
  // an indeterminate acquire that did grant: a later read shows it
  const granted = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'info', { code: 'timeout' }, 3000)
    .add('c3', 'read', { lock: 'L' }, 3100, 'ok', { held: true, holder: SA, holder_token: 17 }, 3101);
  assert.equal(checkLinearizable(granted.ops()).valid, true);
  // …and one that did not
  const notGranted = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'info', { code: 'timeout' }, 3000)
    .add('c2', 'acquire', { lock: 'L', session: SB }, 3100, 'ok', { token: 18 }, 3101)
    .add('c1', 'keepalive', { session: SA }, 3200, 'ok', {}, 3201);
  assert.equal(checkLinearizable(notGranted.ops()).valid, true);
  // an indeterminate release: the lock may still be held or not
  const rel = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c1', 'release', { lock: 'L', session: SA, token: 5 }, 20, 'info', { code: 'timeout' }, 3000)
    .add('c3', 'read', { lock: 'L' }, 3100, 'ok', { held: true, holder: SA, holder_token: 5 }, 3101)
    .add('c3', 'read', { lock: 'L' }, 3200, 'ok', { held: false }, 3201);
  assert.equal(checkLinearizable(rel.ops()).valid, true);
  // but it cannot un-happen: free, then held again by SA without a new acquire
  const flip = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c1', 'release', { lock: 'L', session: SA, token: 5 }, 20, 'info', { code: 'timeout' }, 3000)
    .add('c3', 'read', { lock: 'L' }, 3100, 'ok', { held: false }, 3101)
    .add('c3', 'read', { lock: 'L' }, 3200, 'ok', { held: true, holder: SA, holder_token: 5 }, 3201);
  assert.equal(checkLinearizable(flip.ops()).valid, false);
});

test('lock model: locks are checked independently', () => {
  const h = base()
    .add('c1', 'acquire', { lock: 'L1', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c2', 'acquire', { lock: 'L2', session: SB }, 11, 'ok', { token: 6 }, 13)
    .add('c1', 'acquire', { lock: 'L2', session: SA }, 20, 'fail', { code: 'lock_held', holder: SB, holder_token: 6 }, 21);
  const r = checkLinearizable(h.ops());
  assert.equal(r.valid, true);
  assert.deepEqual(r.perLock.map((p) => p.lock), ['L1', 'L2']);
});

test('lock model: many indeterminate ops over a long outage are decided quickly, both ways', () => {
  // n sessions each send an acquire that times out (info) while SA holds the lock; then SA
  // releases and one of them turns out to hold it. Trying each info op as a no-op at every
  // point of its window made this 2^n per point: before the checker deferred those no-ops
  // to the end of their windows, 12 sessions gave up after 5,000,000 steps (and 8, in the
  // illegal case); now they take a few ten thousand.
  const build = (n: number, holderAtEnd: (ss: string[]) => string, tokenAtEnd: number): Op[] => {
    const sessions = Array.from({ length: n }, (_, i) => String(i).padStart(2, '0').repeat(16));
    let h = base().add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12);
    sessions.forEach((s, i) => {
      h = h.add(`o${i}`, 'open', {}, 1, 'ok', { session: s }, 2).add(`o${i}`, 'acquire', { lock: 'L', session: s, wait_ms: 100 }, 20 + i, 'info', { code: 'timeout' }, 5000 + i);
    });
    for (let t = 30; t < 4000; t += 100) h = h.add('r', 'read', { lock: 'L' }, t, 'ok', { held: true, holder: SA, holder_token: 5 }, t + 5);
    return h
      .add('c1', 'release', { lock: 'L', session: SA, token: 5 }, 4100, 'ok', {}, 4110)
      .add('r', 'read', { lock: 'L' }, 6000, 'ok', { held: true, holder: holderAtEnd(sessions), holder_token: tokenAtEnd }, 6001)
      .ops();
  };
  const good = checkLinearizable(build(12, (ss) => ss[7]!, 9), { maxSteps: 200_000 });
  assert.equal(good.valid, true, JSON.stringify(good));
  // the released holder cannot come back without a new acquire
  const bad = checkLinearizable(build(8, () => SA, 5), { maxSteps: 200_000 });
  assert.equal(bad.valid, false, JSON.stringify(bad));
});

test('lock model: a close answered ok ended a live session and names the locks it held', () => {
  const held = base().add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12);
  assert.equal(checkLinearizable(base().add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12).add('c1', 'close', { session: SA }, 20, 'ok', { released: ['L'] }, 21).ops()).valid, true);
  // it held L, so the close must list it
  assert.equal(checkLinearizable(held.add('c1', 'close', { session: SA }, 20, 'ok', { released: [] }, 21).ops()).valid, false);
  // a session already known dead cannot be closed with ok
  const expired = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'ok', { token: 5 }, 12)
    .add('c1', 'keepalive', { session: SA }, 100, 'fail', { code: 'session_not_found' }, 101)
    .add('c1', 'close', { session: SA }, 200, 'ok', { released: [] }, 201);
  assert.equal(checkLinearizable(expired.ops()).valid, false);
});

test('lock model: an indeterminate acquire, then a close that does not list the lock', () => {
  // the acquire never granted: consistent with a read that sees the lock free
  const free = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'info', { code: 'timeout' }, 3000)
    .add('c3', 'read', { lock: 'L' }, 3100, 'ok', { held: false }, 3101)
    .add('c1', 'close', { session: SA }, 3200, 'ok', { released: [] }, 3201);
  assert.equal(checkLinearizable(free.ops()).valid, true);
  // …but a read that saw it granted has no explanation left
  const seen = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'info', { code: 'timeout' }, 3000)
    .add('c3', 'read', { lock: 'L' }, 3100, 'ok', { held: true, holder: SA, holder_token: 7 }, 3101)
    .add('c1', 'close', { session: SA }, 3200, 'ok', { released: [] }, 3201);
  assert.equal(checkLinearizable(seen.ops()).valid, false);
  // and when the close does list the lock, the grant happened
  const granted = base()
    .add('c1', 'acquire', { lock: 'L', session: SA }, 10, 'info', { code: 'timeout' }, 3000)
    .add('c3', 'read', { lock: 'L' }, 3100, 'ok', { held: true, holder: SA, holder_token: 7 }, 3101)
    .add('c1', 'close', { session: SA }, 3200, 'ok', { released: ['L'] }, 3201);
  assert.equal(checkLinearizable(granted.ops()).valid, true);
});

// ---- the inert hint: ops that can change nothing any more are placed at once --------

test('inert hint: 300 ended max-hold grants and unknown reads no longer cost the walk a step each at every placement', async () => {
  const { partitionByName } = await import('./linearizability.js');
  const { historyModel } = await import('../../model/history-model.js');
  let h = base();
  let t = 10;
  for (let i = 0; i < 300; i++, t += 10) {
    // each grant may end by its max hold from its call on, and nobody saw the session die:
    // its synthetic expire-hold stays open to the end of the history
    h = h.add('c1', 'acquire', { lock: 'L', session: SA, max_hold_ms: 5000 }, t, 'ok', { token: 10 + i }, t + 2)
      .add('c1', 'release', { lock: 'L', session: SA, token: 10 + i }, t + 3, 'ok', {}, t + 4)
      .add('r', 'read', { lock: 'L' }, t + 5, 'info', { code: 'timeout' }, t + 9);
  }
  const [p] = partitionByName(h.ops());
  assert.ok(p !== undefined);
  const model = historyModel(p.names, p.kind);
  const { inert: _inert, ...plain } = model;
  const without = checkOperations(plain, p.ops, { maxSteps: 20_000 });
  const withHint = checkOperations(model, p.ops, { maxSteps: 20_000 });
  assert.equal(without.result, 'unknown', `without the hint: ${without.steps} steps`);
  assert.equal(withHint.result, 'ok', `with it: ${withHint.steps} steps`);
  assert.ok(withHint.steps < 5_000, String(withHint.steps));
});

test('inert hint: a stale expire-hold still cannot end a later grant, and an op the model calls inert must be the identity', () => {
  // SA's first grant (max hold) is released; its second has no max hold and is released
  // later: a read between that shows the lock free cannot be placed, hint or not
  const h = base()
    .add('c1', 'acquire', { lock: 'L', session: SA, max_hold_ms: 300 }, 10, 'ok', { token: 5 }, 12)
    .add('c1', 'release', { lock: 'L', session: SA, token: 5 }, 13, 'ok', {}, 14)
    .add('c1', 'acquire', { lock: 'L', session: SA }, 20, 'ok', { token: 9 }, 21)
    .add('r', 'read', { lock: 'L' }, 30, 'ok', { held: false }, 31)
    .add('c1', 'release', { lock: 'L', session: SA, token: 9 }, 40, 'ok', {}, 41);
  assert.equal(checkLinearizable(h.ops()).valid, false);
  // the search checks the claim: a model that calls a write inert is refused loudly
  const liar: Model<number, RegIn, number> = { ...register, inert: (_s, i) => i.f === 'w' };
  assert.throws(() => checkOperations(liar, [op('w', 1, 0, 10), op('r', 0, 20, 30, 1)]), /calls operation 0 inert/);
});
