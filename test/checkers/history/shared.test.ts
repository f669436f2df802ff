// The shared-lock and semaphore checkers on small hand-written histories and access logs:
// each must accept a correct history (readers overlapping readers, permits up to the
// limit, a paused holder acting outside its window) and name the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkSemaphores, checkSharedLocks } from './shared.js';
import { checkTokenOrder } from './token-order.js';
import type { AccessLogEntry } from './resource-logs.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);
const SC = 'c'.repeat(32);
const TTL = 2000;

/** an access log from [t, phase, name, token, read|write|permits, accepted?] rows, in order */
function log(rows: [number, 'begin' | 'end', string, number, 'read' | 'write' | number, boolean?][]): AccessLogEntry[] {
  return rows.map(([t, phase, name, token, m, accepted], seq) => ({
    seq,
    t,
    phase,
    name,
    token,
    ...(typeof m === 'number' ? { permits: m } : { mode: m }),
    accepted: accepted ?? true,
    highestWrite: 0,
    highestAny: 0,
    active: 0,
  }));
}

const L = 'js-0';
const S = 'jm-0';

test('shared locks: readers overlapping readers pass, then a writer after both released', () => {
  const h = ops([
    ['c1', 'acquire', { lock: L, session: SA, mode: 'shared' }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: L, session: SB, mode: 'shared' }, 20, 'ok', { token: 6 }, 30],
    ['c1', 'release', { lock: L, session: SA, token: 5 }, 400, 'ok', {}, 410],
    ['c2', 'release', { lock: L, session: SB, token: 6 }, 450, 'ok', {}, 460],
    ['c3', 'acquire', { lock: L, session: SC, mode: 'exclusive', wait_ms: 1000 }, 100, 'ok', { token: 7 }, 470],
    ['c3', 'release', { lock: L, session: SC, token: 7 }, 800, 'ok', {}, 810],
  ]);
  const a = log([
    [40, 'begin', L, 5, 'read'],
    [50, 'begin', L, 6, 'read'],
    [300, 'end', L, 5, 'read'],
    [350, 'end', L, 6, 'read'],
    [500, 'begin', L, 7, 'write'],
    [700, 'end', L, 7, 'write'],
  ]);
  const r = checkSharedLocks(h, a, TTL, true);
  assert.deepEqual(r.violations, []);
  assert.equal(r.concurrentReads, 1, 'the two reads overlapped, and that is allowed');
  assert.equal(r.sharedGrants, 2);
  assert.equal(r.exclusiveGrants, 1);
  assert.deepEqual(checkTokenOrder(h), []);
});

test('shared locks: a writer granted, and writing, while a reader is inside its safe window is caught', () => {
  const h = ops([
    ['c1', 'acquire', { lock: L, session: SA, mode: 'shared' }, 0, 'ok', { token: 5 }, 10],
    ['c3', 'acquire', { lock: L, session: SC, mode: 'exclusive' }, 100, 'ok', { token: 6 }, 110],
    ['c1', 'release', { lock: L, session: SA, token: 5 }, 400, 'ok', {}, 410],
    ['c3', 'release', { lock: L, session: SC, token: 6 }, 450, 'ok', {}, 460],
  ]);
  const a = log([
    [40, 'begin', L, 5, 'read'],
    [150, 'begin', L, 6, 'write'],
    [300, 'end', L, 5, 'read', false], // the resource refused the reader's end (a write began)
    [350, 'end', L, 6, 'write'],
  ]);
  const v = checkSharedLocks(h, a, TTL, true).violations.join('\n');
  assert.match(v, /shared lock: js-0 granted exclusive to cccccccc \(token 6\) by t=110\.0 while aaaaaaaa held it shared \(token 5\) safely until 400\.0/);
  assert.match(v, /the read with token 5 .* and the write with token 6 .* overlap in \[150\.0, 300\.0\], inside both holders' safe windows/);
  assert.doesNotMatch(v, /fencing/, 'the resource did its part: it refused the read that a write overlapped');
  // two writers, the same
  const ww = ops([
    ['c1', 'acquire', { lock: L, session: SA, mode: 'exclusive' }, 0, 'ok', { token: 5 }, 10],
    ['c3', 'acquire', { lock: L, session: SC, mode: 'exclusive' }, 100, 'ok', { token: 6 }, 110],
  ]);
  assert.equal(checkSharedLocks(ww, [], TTL, true).violations.length, 1);
});

test('shared locks: a paused holder acting after its window closed is fencing\'s job, not a violation; a resource that accepts it is', () => {
  // c1 writes with token 5, is paused past its TTL (its last acknowledged op was sent at
  // 0: safe until 2000); c2 reads with token 6 from 2500; c1 wakes and ends its write at 2600
  const h = ops([
    ['c1', 'acquire', { lock: L, session: SA, mode: 'exclusive' }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'acquire', { lock: L, session: SB, mode: 'shared', wait_ms: 5000 }, 100, 'ok', { token: 6 }, 2400],
    ['c2', 'keepalive', { session: SB }, 2350, 'ok', {}, 2360],
    ['c2', 'release', { lock: L, session: SB, token: 6 }, 2800, 'ok', {}, 2810],
  ]);
  const fenced = log([
    [20, 'begin', L, 5, 'write'],
    [2500, 'begin', L, 6, 'read'],
    [2600, 'end', L, 5, 'write', false],
    [2700, 'end', L, 6, 'read'],
  ]);
  const r = checkSharedLocks(h, fenced, TTL, true);
  assert.deepEqual(r.violations, []);
  assert.equal(r.rejected, 1);
  // without the resource's refusal the accesses still overlap only outside c1's window
  assert.equal(r.concurrentReads, 0);
  // the resource accepted the stale write's end: a read with a higher token had begun
  const broken = log([
    [20, 'begin', L, 5, 'write'],
    [2500, 'begin', L, 6, 'read'],
    [2600, 'end', L, 5, 'write', true],
    [2700, 'end', L, 6, 'read'],
  ]);
  const v = checkSharedLocks(h, broken, TTL, true).violations.join('\n');
  assert.match(v, /shared lock fencing: the resource accepted the end of a write on js-0 with token 5 after an access with token 6 had begun/);
  assert.match(v, /accepted the write with token 5 .* and the read with token 6 .* which overlap/);
  // a control run (fencing off) counts the same instead of failing
  const control = checkSharedLocks(h, broken, TTL, false);
  assert.deepEqual(control.violations, []);
  assert.equal(control.staleAccepted, 1);
  assert.equal(control.overlapsAccepted, 1);
  // a read accepted below a write's token; with fencing off (a control run) nothing is claimed
  const staleRead = log([
    [20, 'begin', L, 6, 'write'],
    [30, 'begin', L, 5, 'read', true],
  ]);
  assert.match(checkSharedLocks([], staleRead, TTL, true).violations.join('\n'), /accepted the begin of a read on js-0 with token 5 after a write with token 6/);
  assert.deepEqual(checkSharedLocks([], staleRead, TTL, false).violations, []);
});

test('shared locks: a reader that gave up and released without a token let go of what it got', () => {
  // the given-up acquire was granted (a read saw the share... here: its retry answered ok
  // later with the grant) — a release without a token sent after it ends the window
  const h = ops([
    ['c1', 'acquire', { lock: L, session: SA, mode: 'exclusive', wait_ms: 1000, give_up_ms: 100 }, 0, 'info', { code: 'gave-up' }, 100],
    ['c1', 'release', { lock: L, session: SA }, 100, 'ok', {}, 110],
    ['c1', 'renew', { lock: L, session: SA, mode: 'exclusive' }, 50, 'ok', { token: 5 }, 60],
    ['c2', 'acquire', { lock: L, session: SB, mode: 'shared', wait_ms: 1000 }, 20, 'ok', { token: 6 }, 120],
  ]);
  assert.deepEqual(checkSharedLocks(h, [], TTL, true).violations, []);
});

test('semaphores: permits up to the limit pass; a grant beyond it is caught', () => {
  const fine = ops([
    ['c1', 'sem-acquire', { lock: S, session: SA, permits: 1, limit: 2 }, 0, 'ok', { token: 5, permits: 1, limit: 2 }, 10],
    ['c2', 'sem-acquire', { lock: S, session: SB, permits: 1, limit: 2 }, 20, 'ok', { token: 6, permits: 1, limit: 2 }, 30],
    ['c3', 'sem-acquire', { lock: S, session: SC, permits: 2, limit: 2, wait_ms: 1000 }, 40, 'ok', { token: 7, permits: 2, limit: 2 }, 520],
    ['c1', 'sem-release', { lock: S, session: SA }, 400, 'ok', {}, 410],
    ['c2', 'sem-release', { lock: S, session: SB }, 500, 'ok', {}, 510],
    ['c4', 'sem-read', { lock: S }, 600, 'ok', { limit: 2, in_use: 2, holders: [{ session: SC, token: 7, permits: 2 }] }, 610],
  ]);
  const a = log([
    [15, 'begin', S, 5, 1],
    [35, 'begin', S, 6, 1],
    [300, 'end', S, 5, 1],
    [350, 'end', S, 6, 1],
    [530, 'begin', S, 7, 2],
    [700, 'end', S, 7, 2],
  ]);
  const r = checkSemaphores(fine, a, TTL);
  assert.deepEqual(r.violations, []);
  assert.equal(r.maxInWindows[S], 2);
  assert.equal(r.limits[S], 2);
  assert.deepEqual(checkTokenOrder(fine), []);

  // c3's 2 permits granted while c1 and c2 hold 1 each
  const over = ops([
    ['c1', 'sem-acquire', { lock: S, session: SA, permits: 1, limit: 2 }, 0, 'ok', { token: 5, permits: 1, limit: 2 }, 10],
    ['c2', 'sem-acquire', { lock: S, session: SB, permits: 1, limit: 2 }, 20, 'ok', { token: 6, permits: 1, limit: 2 }, 30],
    ['c3', 'sem-acquire', { lock: S, session: SC, permits: 2, limit: 2 }, 40, 'ok', { token: 7, permits: 2, limit: 2 }, 50],
  ]);
  const b = log([
    [15, 'begin', S, 5, 1],
    [35, 'begin', S, 6, 1],
    [60, 'begin', S, 7, 2],
    [300, 'end', S, 5, 1],
    [350, 'end', S, 6, 1],
    [400, 'end', S, 7, 2],
  ]);
  const v = checkSemaphores(over, b, TTL).violations.join('\n');
  assert.match(v, /semaphore: jm-0 granted 2 permit\(s\) to cccccccc \(token 7\) by t=50\.0 while aaaaaaaa held 1 \(token 5\), bbbbbbbb held 1 \(token 6\) safely: 4 permits, limit 2/);
  assert.match(v, /semaphore: 4 permits of jm-0 in use at the resource at t=60\.0 inside their holders' safe windows, limit 2/);
});

test('semaphores: a paused holder counted by the resource after its window closed is not a violation', () => {
  // c1 (2 permits) stops renewing at 0 (safe until 2000) and is still "using" at 2500
  const h = ops([
    ['c1', 'sem-acquire', { lock: S, session: SA, permits: 2, limit: 2 }, 0, 'ok', { token: 5, permits: 2, limit: 2 }, 10],
    ['c2', 'sem-acquire', { lock: S, session: SB, permits: 1, limit: 2, wait_ms: 5000 }, 20, 'ok', { token: 6, permits: 1, limit: 2 }, 2300],
    ['c2', 'keepalive', { session: SB }, 2250, 'ok', {}, 2260],
  ]);
  const a = log([
    [15, 'begin', S, 5, 2],
    [2400, 'begin', S, 6, 1],
    [2500, 'end', S, 5, 2],
    [2600, 'end', S, 6, 1],
  ]);
  a[1]!.active = 3; // the resource saw 3 permits in use: the stale holder's and the new one
  const r = checkSemaphores(h, a, TTL);
  assert.deepEqual(r.violations, []);
  assert.equal(r.maxAtResource[S], 3);
  assert.equal(r.maxInWindows[S], 2);
});

test("semaphores: a re-acquire answered with the grant's own max_hold_ms ends its safe window there, though it asked for none (jepsen-lite seed 380155236)", () => {
  // c1's first acquire (max hold 1000) was given up on and granted late (token 5); its
  // re-acquire returned that grant, answered with 300 ms left of its max hold. c2's 2
  // permits after those 300 ms are no violation; without the answer's word they were.
  const h = (told: Record<string, number>): ReturnType<typeof ops> => ops([
    ['c1', 'sem-acquire', { lock: S, session: SA, permits: 1, limit: 2, max_hold_ms: 1000 }, 0, 'info', { code: 'gave-up' }, 100],
    ['c1', 'sem-acquire', { lock: S, session: SA, permits: 1, limit: 2 }, 700, 'ok', { token: 5, permits: 1, limit: 2, ...told }, 710],
    ['c1', 'keepalive', { session: SA }, 1500, 'ok', {}, 1510],
    ['c2', 'sem-acquire', { lock: S, session: SB, permits: 2, limit: 2 }, 1050, 'ok', { token: 6, permits: 2, limit: 2 }, 1100],
  ]);
  assert.deepEqual(checkSemaphores(h({ max_hold_ms: 300 }), [], TTL).violations, []);
  assert.match(checkSemaphores(h({}), [], TTL).violations.join('\n'), /granted 2 permit\(s\) to bbbbbbbb \(token 6\)/);
});

test('semaphores: a grant only reads saw ends by the earliest max hold of the acquires that can have made it, not the last one sent', () => {
  // c1's acquire with a max hold of 300 ms was given up on (granted late, token 5); its next
  // acquire, with none, sat at a paused node (info). A read at 600 shows the grant; the
  // service ended it at its max hold, and c2 got both permits at 1000.
  const h = ops([
    ['c1', 'sem-acquire', { lock: S, session: SA, permits: 1, limit: 2, max_hold_ms: 300 }, 0, 'info', { code: 'gave-up' }, 100],
    ['c1', 'sem-acquire', { lock: S, session: SA, permits: 1, limit: 2 }, 500, 'info', { code: 'timeout' }, 3000],
    ['c4', 'sem-read', { lock: S }, 590, 'ok', { limit: 2, in_use: 1, holders: [{ session: SA, token: 5, permits: 1 }] }, 600],
    ['c1', 'keepalive', { session: SA }, 550, 'ok', {}, 560],
    ['c2', 'sem-acquire', { lock: S, session: SB, permits: 2, limit: 2 }, 950, 'ok', { token: 6, permits: 2, limit: 2 }, 1000],
  ]);
  assert.deepEqual(checkSemaphores(h, [], TTL).violations, []);
});

test('semaphores: a read showing more permits in use than the limit, or holders that do not add up, is caught', () => {
  const h = ops([
    ['c1', 'sem-acquire', { lock: S, session: SA, permits: 2, limit: 2 }, 0, 'ok', { token: 5, permits: 2, limit: 2 }, 10],
    ['c4', 'sem-read', { lock: S }, 100, 'ok', { limit: 2, in_use: 3, holders: [{ session: SA, token: 5, permits: 2 }, { session: SB, token: 6, permits: 1 }] }, 110],
    ['c4', 'sem-read', { lock: S }, 200, 'ok', { limit: 2, in_use: 2, holders: [] }, 210],
  ]);
  const v = checkSemaphores(h, [], TTL).violations;
  assert.ok(v.some((x) => /a read of jm-0 shows 3 permits in use/.test(x)), v.join('\n'));
  assert.ok(v.some((x) => /shows 2 permits in use \(holders' permits add up to 0\)/.test(x)), v.join('\n'));
  // the grant the first read shows (bbbbbbbb, token 6) beside aaaaaaaa's 2 is over the limit too
  assert.ok(v.some((x) => /granted 1 permit\(s\) to bbbbbbbb \(token 6\)/.test(x)), v.join('\n'));
});

test('token order: a semaphore grant below a lock grant that completed before it was asked is caught, and one token is one grant', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'jl-0', session: SA }, 0, 'ok', { token: 9 }, 10],
    ['c2', 'sem-acquire', { lock: S, session: SB, permits: 1, limit: 2 }, 20, 'ok', { token: 8, permits: 1, limit: 2 }, 30],
  ]);
  assert.match(checkTokenOrder(h).join('\n'), /token 8 \(jm-0\) was granted after token 9 \(jl-0\)/);
  const same = ops([
    ['c1', 'acquire', { lock: 'jl-0', session: SA }, 0, 'ok', { token: 9 }, 10],
    ['c2', 'sem-acquire', { lock: S, session: SB, permits: 1, limit: 2 }, 5, 'ok', { token: 9, permits: 1, limit: 2 }, 30],
  ]);
  assert.match(checkTokenOrder(same).join('\n'), /token 9 was granted for lock jl-0 and for semaphore jm-0/);
});
