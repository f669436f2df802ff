// The wait-bound checker on hand-written histories: a wait granted within wait_ms (plus the
// election allowance) passes; one granted after a read past its deadline saw the lock
// still at a lower token fails, also when the acquire's answer was lost and a read shows
// the grant; a fault window extends the deadline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkWaitBounds, checkWaitQueues } from './waits.js';

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

// ---- the queue count (checkWaitQueues) ------------------------------------------------------

const SC = 'c'.repeat(32);

test('waits: a read counting more waiters than sessions that can still wait shows a wait that outlived its wait_ms', () => {
  // SA holds L; SB's wait (500 ms) lost its answer at a leader change; SC waits later, answered
  const rows = (readAt: number, waiters: number): Parameters<typeof ops>[0] => [
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 500 }, 100, 'info', { code: 'network_error', last_try: 100 }, 300],
    ['c3', 'acquire', { lock: 'L', session: SC, wait_ms: 800 }, 7000, 'fail', { code: 'lock_held', holder: SA, holder_token: 5, last_try: 7000 }, 7800],
    ['c3r', 'read', { lock: 'L' }, readAt, 'ok', { held: true, holder: SA, holder_token: 5, waiters }, readAt + 10],
  ];
  // at 6000 SB's deadline (100 + 500 + 4000) has passed and nobody else waits: 1 is too many
  const v = checkWaitQueues(ops(rows(6000, 1)), 4000);
  assert.equal(v.length, 1);
  assert.match(v[0]!, /a read shows 1 waiter\(s\) at 6000–6010 ms, but only 0 session\(s\) can still be waiting/);
  assert.match(v[0]!, /suspect \(past its deadline 4600\): c2:1 acquire/);
  // inside SB's deadline, or with SC waiting: fine
  assert.deepEqual(checkWaitQueues(ops(rows(4000, 1)), 4000), []);
  assert.deepEqual(checkWaitQueues(ops(rows(7400, 1)), 4000), []);
  // but two waiters while only SC can wait: caught
  assert.equal(checkWaitQueues(ops(rows(7400, 2)), 4000).length, 1);
  // a fault window over SB's wait extends its deadline
  assert.deepEqual(checkWaitQueues(ops(rows(6000, 1)), 4000, [{ start: 200, end: 2000 }]), []);
  // after SC's answer (a refusal: its wait ended) it no longer counts
  assert.equal(checkWaitQueues(ops(rows(7900, 1)), 4000).length, 1);
});

test('waits: a session counts once however many of its acquires overlap the read, and the holder never waits', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 1000 }, 0, 'ok', { token: 5, last_try: 0 }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 3000 }, 100, 'info', { code: 'timeout', last_try: 100 }, 2000],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 3000 }, 2100, 'info', { code: 'timeout', last_try: 2100 }, 4000],
    ['c3r', 'read', { lock: 'L' }, 2500, 'ok', { held: true, holder: SA, holder_token: 5, waiters: 2 }, 2510],
  ]);
  // SB waits at most once: 2 waiters is one too many (SA holds; its own acquire is over)
  assert.equal(checkWaitQueues(h, 4000).length, 1);
  const one = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 1000 }, 0, 'ok', { token: 5, last_try: 0 }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 3000 }, 100, 'info', { code: 'timeout', last_try: 100 }, 2000],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 3000 }, 2100, 'info', { code: 'timeout', last_try: 2100 }, 4000],
    ['c3r', 'read', { lock: 'L' }, 2500, 'ok', { held: true, holder: SA, holder_token: 5, waiters: 1 }, 2510],
  ]);
  assert.deepEqual(checkWaitQueues(one, 4000), []);
});

test('waits: a set waiting counts for each of its names', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'ja-0', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SB, wait_ms: 2000 }, 100, 'info', { code: 'timeout', last_try: 100 }, 2500],
    ['c3r', 'read', { lock: 'ja-0' }, 1000, 'ok', { held: true, holder: SA, holder_token: 5, waiters: 1 }, 1010],
    ['c3r', 'read', { lock: 'ja-0' }, 9000, 'ok', { held: true, holder: SA, holder_token: 5, waiters: 1 }, 9010],
  ]);
  const v = checkWaitQueues(h, 4000);
  assert.equal(v.length, 1);
  assert.match(v[0]!, /at 9000–9010 ms/);
  // a set refused after waiting was queued until its answer (seed 8181's false positive,
  // when the checker took the per-name projection, which leaves refused sets out)
  const refused = ops([
    ['c1', 'acquire', { lock: 'ja-0', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire-all', { names: ['ja-3', 'ja-0'], session: SB, wait_ms: 800 }, 100, 'fail', { code: 'lock_held', last_try: 3000 }, 4000],
    ['c3r', 'read', { lock: 'ja-0' }, 3500, 'ok', { held: true, holder: SA, holder_token: 5, waiters: 1 }, 3510],
  ]);
  assert.deepEqual(checkWaitQueues(refused, 4000), []);
});

test('waits: with the leaders\' offices known, a fault adds only the time until a new leader took office', () => {
  // SB's wait (500 ms, sent at 100) outlives its deadline; a leader pause 1000–5000 with a
  // new leader in office at 2000 lost 1000 ms of log time, not the window's 4000
  const late = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 500 }, 100, 'info', { code: 'network_error', last_try: 100 }, 300],
    ['c3r', 'read', { lock: 'L' }, 6000, 'ok', { held: true, holder: SA, holder_token: 5, waiters: 1 }, 6010],
  ]);
  const pause = [{ start: 1000, end: 5000, variant: 'pause-leader' }];
  // deadline 100 + 500 + 4000 + 1000 = 5600 < 6000
  assert.match(checkWaitQueues(late, 4000, pause, { t: [0, 2000], electionMaxMs: 1000 })[0] ?? '', /suspect \(past its deadline 5600\)/);
  // without offices the whole window counts: 8600
  assert.deepEqual(checkWaitQueues(late, 4000, pause), []);
  // no leader change during the fault: the same leader stamped throughout, nothing added
  assert.match(checkWaitQueues(late, 4000, pause, { t: [0], electionMaxMs: 1000 })[0] ?? '', /past its deadline 4600/);
  // a leader change no fault explains adds nothing beyond the rule without offices (which
  // has no fault to extend by: checker 7 reports that change itself)
  assert.equal(checkWaitQueues(late, 4000, [], { t: [0, 3000], electionMaxMs: 1000 }).length, 1);
  // clock, membership and disk faults count whole
  assert.deepEqual(checkWaitQueues(late, 4000, [{ start: 1000, end: 5000, variant: 'clock-slow-leader' }], { t: [0], electionMaxMs: 1000 }), []);
  // a request sent while a node was paused may be queued only at the heal: from then on
  const sentInPause = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB, wait_ms: 500 }, 1500, 'info', { code: 'client_timeout', last_try: 1500 }, 3500],
    ['c3r', 'read', { lock: 'L' }, 9000, 'ok', { held: true, holder: SA, holder_token: 5, waiters: 1 }, 9010],
  ]);
  // 1500 + 3500 (to the heal) + 500 + 4000 (+ 500 to the office: 10000, but never later
  // than the whole-window rule's 9500)
  assert.deepEqual(checkWaitQueues(sentInPause, 4000, pause, { t: [0, 2000], electionMaxMs: 1000 }), []);
  assert.equal(checkWaitQueues(sentInPause, 4000, [{ ...pause[0]!, variant: 'kill-leader' }], { t: [0, 2000], electionMaxMs: 1000 }).length, 1);
  // a leader that took office after the heal, within two election timeouts, is the fault's
  assert.deepEqual(checkWaitQueues(late, 4000, pause, { t: [0, 6500], electionMaxMs: 1000 }), []);
});
