// The wait-bound checker on hand-written histories: a wait granted within wait_ms (plus the
// election allowance) passes; one granted after a read past its deadline saw the lock
// still at a lower token fails, also when the acquire's answer was lost and a read shows
// the grant; a fault window extends the deadline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkWaitBounds } from './checkers-waits.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);

test('waits: a grant after a read past the deadline saw a lower token is a wait that outlived its wait_ms', () => {
  const late = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 1000 }, 100, 'ok', { token: 6, last_try: 100 }, 9000],
    ['c3', 'read', { lock: 'L' }, 6000, 'ok', { held: true, holder: SA, holder_token: 5 }, 6010],
  ]);
  const v = checkWaitBounds(late, 4000);
  assert.equal(v.length, 1);
  assert.match(v[0]!, /granted token 6 after 6000 ms, when the lock was still at token 5 — past its deadline 5100/);
  // the same read inside the deadline: fine
  assert.deepEqual(checkWaitBounds(late, 6000), []);
  // a fault window over the wait extends it
  assert.deepEqual(checkWaitBounds(late, 4000, [{ start: 500, end: 2000 }]), []);
  // a retry sent later (last_try) may extend the wait
  const retried = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 1000 }, 100, 'ok', { token: 6, last_try: 3000 }, 9000],
    ['c3', 'read', { lock: 'L' }, 6000, 'ok', { held: true, holder: SA, holder_token: 5 }, 6010],
  ]);
  assert.deepEqual(checkWaitBounds(retried, 4000), []);
});

test('waits: an acquire whose answer was lost, granted late as a later read shows', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 500 }, 100, 'info', { code: 'timeout', last_try: 200 }, 4600],
    ['c3', 'read', { lock: 'L' }, 8000, 'ok', { held: true, holder: SA, holder_token: 5 }, 8010],
    ['c3', 'read', { lock: 'L' }, 9000, 'ok', { held: true, holder: SB, holder_token: 7 }, 9010],
  ]);
  assert.match(checkWaitBounds(h, 4000)[0] ?? '', /granted token 7 after 8000 ms/);
  // the session acquired the name again before the read: that grant may be the later one's
  const again = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 500 }, 100, 'info', { code: 'timeout', last_try: 200 }, 4600],
    ['c3', 'read', { lock: 'L' }, 8000, 'ok', { held: true, holder: SA, holder_token: 5 }, 8010],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 3000 }, 8500, 'info', { code: 'timeout', last_try: 8500 }, 12000],
    ['c3', 'read', { lock: 'L' }, 9000, 'ok', { held: true, holder: SB, holder_token: 7 }, 9010],
  ]);
  assert.deepEqual(checkWaitBounds(again, 4000), []);
});
