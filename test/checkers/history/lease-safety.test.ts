// lease-safety.ts on small hand-written histories: it must accept a correct history and name
// the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkLeaseSafety } from './lease-safety.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);

test('lease safety: a grant after the holder stopped renewing for a TTL is fine; one inside the window is not', () => {
  const ttl = 2000;
  const fine = ops([
    ['c1', 'acquire', { lock: 'L', session: SA }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'keepalive', { session: SA }, 500, 'ok', {}, 510],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 5000 }, 600, 'ok', { token: 6 }, 2600],
  ]);
  assert.deepEqual(checkLeaseSafety(fine, ttl), []);
  const early = ops([
    ['c1', 'acquire', { lock: 'L', session: SA }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'keepalive', { session: SA }, 500, 'ok', {}, 510],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 5000 }, 600, 'ok', { token: 6 }, 2400],
  ]);
  const v = checkLeaseSafety(early, ttl);
  assert.equal(v.length, 1);
  assert.match(v[0]!, /safe until 2500/);
  // a release started before the second grant makes it fine again
  const released = ops([
    ['c1', 'acquire', { lock: 'L', session: SA }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'release', { lock: 'L', session: SA, token: 5 }, 100, 'info', { code: 'timeout' }, 3000],
    ['c2', 'acquire', { lock: 'L', session: SB }, 200, 'ok', { token: 6 }, 210],
  ]);
  assert.deepEqual(checkLeaseSafety(released, ttl), []);
});

test('lease safety: a revoked grant or one past its max hold ends its window; without either the next grant inside it is caught', () => {
  const ttl = 2000;
  const next = (extra: Parameters<typeof ops>[0]): ReturnType<typeof ops> =>
    ops([
      ['c1', 'acquire', { lock: 'L', session: SA }, 0, 'ok', { token: 5 }, 10],
      ...extra,
      ['c1', 'keepalive', { session: SA }, 500, 'ok', {}, 510],
      ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 5000 }, 600, 'ok', { token: 6 }, 900],
    ]);
  assert.equal(checkLeaseSafety(next([]), ttl).length, 1);
  assert.deepEqual(checkLeaseSafety(next([['probe', 'revoke', { lock: 'L', session: SA }, 300, 'ok', { revoked: [{ session: SA, token: 5 }] }, 320]]), ttl), []);
  // a revoke of another session's grant, or of a semaphore of that name, ends nothing
  assert.equal(checkLeaseSafety(next([['probe', 'revoke', { lock: 'L', session: SB }, 300, 'ok', { revoked: [] }, 320]]), ttl).length, 1);
  assert.equal(checkLeaseSafety(next([['probe', 'revoke', { lock: 'L', target: 'semaphore' }, 300, 'ok', { revoked: [] }, 320]]), ttl).length, 1);
  const held = (maxHoldMs: number | undefined): ReturnType<typeof ops> =>
    ops([
      ['c1', 'acquire', { lock: 'L', session: SA, ...(maxHoldMs !== undefined ? { max_hold_ms: maxHoldMs } : {}) }, 0, 'ok', { token: 5 }, 10],
      ['c1', 'keepalive', { session: SA }, 500, 'ok', {}, 510],
      ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 5000 }, 600, 'ok', { token: 6 }, 900],
    ]);
  assert.deepEqual(checkLeaseSafety(held(800), ttl), []);
  // the max hold counts from the acquire's send: 1000 ms had not run out at 900
  assert.equal(checkLeaseSafety(held(1000), ttl).length, 1);
  assert.equal(checkLeaseSafety(held(undefined), ttl).length, 1);
});

test('lease safety: a tokenless cleanup release after a given-up acquire lets go of the grant that acquire got (seed 2427)', () => {
  const ttl = 2000;
  const rows: Parameters<typeof ops>[0] = [
    ['c1', 'keepalive', { session: SA }, 0, 'ok', {}, 10],
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 201, give_up_ms: 118 }, 100, 'info', { code: 'gave-up' }, 218],
    ['c4', 'read', { lock: 'L' }, 150, 'ok', { held: true, holder: SA, holder_token: 41 }, 300], // the grant raced the abort
    ['c1', 'release', { lock: 'L', session: SA }, 230, 'ok', {}, 400],
    ['c3', 'read', { lock: 'L' }, 420, 'ok', { held: true, holder: SB, holder_token: 45 }, 500],
    ['c1', 'keepalive', { session: SA }, 600, 'ok', {}, 610],
  ];
  assert.deepEqual(checkLeaseSafety(ops(rows), ttl), []);
  // a tokenless release sent BEFORE the acquire that got the grant lets go of nothing
  const early = ops([rows[0]!, ['c1', 'release', { lock: 'L', session: SA }, 20, 'fail', { code: 'not_holder' }, 40], rows[1]!, rows[2]!, rows[4]!, rows[5]!]);
  assert.equal(checkLeaseSafety(early, ttl).length, 1);
});
