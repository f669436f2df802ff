// token-order.ts on small hand-written histories: it must accept a correct history and name
// the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkTokenOrder } from './token-order.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);

test('fencing: tokens grow in real-time order across locks; one token is never two grants', () => {
  const good = ops([
    ['c1', 'acquire', { lock: 'L1', session: SA }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: 'L2', session: SB }, 5, 'ok', { token: 4 }, 12], // concurrent: either order
    ['c2', 'acquire', { lock: 'L3', session: SB }, 20, 'ok', { token: 7 }, 30],
  ]);
  assert.deepEqual(checkTokenOrder(good), []);
  const bad = ops([
    ['c1', 'acquire', { lock: 'L1', session: SA }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: 'L2', session: SB }, 20, 'ok', { token: 5 }, 30],
  ]);
  assert.equal(checkTokenOrder(bad).length, 1);
  const dup = ops([
    ['c1', 'acquire', { lock: 'L1', session: SA }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'read', { lock: 'L1' }, 20, 'ok', { held: true, holder: SB, holder_token: 5 }, 30],
  ]);
  assert.match(checkTokenOrder(dup).join('\n'), /two sessions/);
  // a grant seen only by a read (its acquire was answered 504 earlier) has no lower bound:
  // seeing token 4 after token 5 was granted is not an order violation (found by CI, seed 756054)
  const seenLate = ops([
    ['c2', 'acquire', { lock: 'L2', session: SB }, 0, 'fail', {}, 8],
    ['c1', 'acquire', { lock: 'L1', session: SA }, 10, 'ok', { token: 5 }, 20],
    ['c3', 'read', { lock: 'L2' }, 30, 'ok', { held: true, holder: SB, holder_token: 4 }, 40],
  ]);
  assert.deepEqual(checkTokenOrder(seenLate), []);
  // but an acquire that STARTED after token 5 was granted and got 4 still is one
  const acquiredLate = ops([
    ['c1', 'acquire', { lock: 'L1', session: SA }, 10, 'ok', { token: 5 }, 20],
    ['c3', 'read', { lock: 'L2' }, 30, 'ok', { held: true, holder: SB, holder_token: 4 }, 40],
    ['c2', 'acquire', { lock: 'L2', session: SB }, 25, 'ok', { token: 4 }, 45],
  ]);
  assert.equal(checkTokenOrder(acquiredLate).length, 1);
  // a same-session acquire that answers the grant its session already holds (seen by a read
  // before that acquire was sent: a given-up acquire applied late) did not make it (the
  // 30-minute run of seed 3030: jm-0's token 20345, read at 1638728, answered again to an
  // acquire sent at 1641379, after token 20380 of je-0 was granted)
  const heldAlready = ops([
    ['c3', 'sem-read', { lock: 'M' }, 0, 'ok', { limit: 2, in_use: 1, holders: [{ session: SB, token: 4, permits: 1 }] }, 10],
    ['c1', 'acquire', { lock: 'L1', session: SA }, 20, 'ok', { token: 5 }, 30],
    ['c2', 'sem-acquire', { lock: 'M', session: SB, permits: 1, limit: 2 }, 40, 'ok', { token: 4, permits: 1, limit: 2 }, 50],
  ]);
  assert.deepEqual(checkTokenOrder(heldAlready), []);
  // a renew, or an acquire retried with its Idempotency-Key (the replay answers the first
  // grant), returns a token granted earlier, by an attempt answered 504: its lower bound is
  // that first attempt, not the retry (CI false positive, seed 272702)
  const replayed = ops([
    ['c2', 'acquire', { lock: 'L2', session: SB }, 0, 'info', {}, 8],
    ['c1', 'acquire', { lock: 'L1', session: SA }, 10, 'ok', { token: 5 }, 20],
    ['c2', 'acquire', { lock: 'L2', session: SB }, 25, 'ok', { token: 4 }, 45],
    ['c2', 'renew', { lock: 'L2', session: SB }, 50, 'ok', { token: 4 }, 55],
  ]);
  assert.deepEqual(checkTokenOrder(replayed), []);
  // after the session released the lock, a new cycle's acquire bounds it again
  const newCycle = ops([
    ['c2', 'acquire', { lock: 'L2', session: SB }, 0, 'ok', { token: 3 }, 8],
    ['c2', 'release', { lock: 'L2', session: SB }, 9, 'ok', {}, 9.5],
    ['c1', 'acquire', { lock: 'L1', session: SA }, 10, 'ok', { token: 5 }, 20],
    ['c2', 'acquire', { lock: 'L2', session: SB }, 25, 'ok', { token: 4 }, 45],
  ]);
  assert.equal(checkTokenOrder(newCycle).length, 1);
});

test('fencing: a grant a session got from an acquire it gave up on, answered to its next acquire after a higher token, is not out of order (CI, seed 334791129)', () => {
  // c1's acquire of L (outcome unknown) is relayed late and granted token 729; c2 gets token
  // 741 of semaphore S; c1's next acquire of L answers the grant its session holds: 729
  const rows = (first: 'info' | 'fail') => ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 465 }, 0, first, first === 'info' ? { code: 'gave-up' } : { code: 'lock_held' }, 100],
    ['c2', 'sem-acquire', { lock: 'S', session: SB, permits: 1, limit: 3 }, 200, 'ok', { token: 741, permits: 1, limit: 3 }, 300],
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 0 }, 400, 'ok', { token: 729 }, 500],
  ]);
  assert.deepEqual(checkTokenOrder(rows('info')), []);
  // the first acquire was refused: nothing of the session's could have made 729 before 741
  assert.match(checkTokenOrder(rows('fail')).join('\n'), /token 729 \(L\) was granted after token 741 \(S\)/);
});
