// The non-linearizability checkers on small hand-written histories: each must accept a
// correct history and name the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkDurability, checkFollowersBehind, checkLeaderChanges, checkLeaseSafety, checkLiveness, checkNoOrphanGrants, checkMemory, checkResource, checkTokenOrder, electionsInLog, recoveries } from './checkers.js';
import type { ResourceLogEntry } from './resource-proc.js';
import { schedule, FAULT_CATEGORIES, categoryOf, ONCE_PER_RUN } from './nemesis.js';
import { seededRng } from '../../src/raft/core/rng.js';

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

test('no orphan grant: a lock held by a session whose every acquire of it was answered as failed is a violation', () => {
  // a queued acquire answered 503 whose committed wait a later leader granted
  const orphan = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 1000 }, 0, 'fail', { code: 'unavailable' }, 10],
    ['c2', 'read', { lock: 'L' }, 500, 'ok', { held: true, holder: SA, holder_token: 3 }, 510],
  ]);
  assert.match(checkNoOrphanGrants(orphan).join('\n'), /orphan grant: L held by aaaaaaaa although every acquire/);
  const viaClose = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 1000 }, 0, 'fail', { code: 'lock_held' }, 1000],
    ['c1', 'close', { session: SA }, 2000, 'ok', { released: ['L'] }, 2010],
  ]);
  assert.equal(checkNoOrphanGrants(viaClose).length, 1, 'the close released a lock the client was told it never got');
  const viaLockHeld = ops([
    ['c1', 'acquire', { lock: 'L', session: SA }, 0, 'fail', { code: 'unavailable' }, 10],
    ['c2', 'acquire', { lock: 'L', session: SB }, 100, 'fail', { code: 'lock_held', holder: SA, holder_token: 3 }, 110],
  ]);
  assert.equal(checkNoOrphanGrants(viaLockHeld).length, 1);
  // not claims: the outcome was unknown and nobody cleaned up; or it was granted; or it is free
  const fine = ops([
    ['c1', 'acquire', { lock: 'L', session: SA }, 0, 'info', { code: 'timeout' }, 10],
    ['c2', 'read', { lock: 'L' }, 500, 'ok', { held: true, holder: SA, holder_token: 3 }, 510],
    ['c3', 'acquire', { lock: 'M', session: SB }, 0, 'ok', { token: 4 }, 10],
    ['c2', 'read', { lock: 'M' }, 500, 'ok', { held: true, holder: SB, holder_token: 4 }, 510],
    ['c3', 'acquire', { lock: 'N', session: SB }, 0, 'fail', { code: 'lock_held' }, 10],
    ['c2', 'read', { lock: 'N' }, 500, 'ok', { held: false }, 510],
  ]);
  assert.deepEqual(checkNoOrphanGrants(fine), []);
});

test('no orphan grant: an acquire answered session_not_found may have granted before the session died, not after', () => {
  // jepsen-lite seed 5151 (5 nodes, 5 min): the acquire committed and granted, the lessor
  // expired the session 360 ms later, and the answer said what was true then
  const expired = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 0 }, 0, 'fail', { code: 'lock_held', holder: SB, holder_token: 2 }, 500],
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 228 }, 1000, 'fail', { code: 'session_not_found' }, 2100],
    ['c2', 'read', { lock: 'L' }, 500, 'ok', { held: true, holder: SA, holder_token: 4 }, 2000],
  ]);
  assert.deepEqual(checkNoOrphanGrants(expired), []);
  const heldAfterDeath = ops([
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 228 }, 1000, 'fail', { code: 'session_not_found' }, 2100],
    ['c2', 'read', { lock: 'L' }, 2500, 'ok', { held: true, holder: SA, holder_token: 4 }, 2600],
  ]);
  assert.match(checkNoOrphanGrants(heldAfterDeath).join('\n'), /orphan grant: L held by aaaaaaaa although every acquire of it by that session failed, was given up and cleaned up, or found the session gone/);
});

test('no orphan grant: a given-up acquire that was cleaned up may linger until the session\'s next close, not beyond', () => {
  const rows: Parameters<typeof ops>[0] = [
    ['c1', 'acquire', { lock: 'L', session: SA, wait_ms: 1000, give_up_ms: 100 }, 0, 'info', { code: 'gave-up' }, 100],
    ['c1', 'release', { lock: 'L', session: SA }, 100, 'fail', { code: 'not_holder' }, 110],
    ['c2', 'read', { lock: 'L' }, 200, 'ok', { held: true, holder: SA, holder_token: 3 }, 210],
    ['c1', 'close', { session: SA }, 300, 'ok', { released: ['L'] }, 310],
  ];
  assert.deepEqual(checkNoOrphanGrants(ops(rows)), [], 'held until the next close: allowed');
  const beyond = ops([...rows, ['c2', 'read', { lock: 'L' }, 400, 'ok', { held: true, holder: SA, holder_token: 3 }, 410]]);
  assert.match(checkNoOrphanGrants(beyond).join('\n'), /gave up on every acquire of it, released it, and the session was closed since/);
  // without the cleanup release the client made no claim at all
  const noCleanup = ops([rows[0]!, rows[2]!, ['c2', 'read', { lock: 'L' }, 400, 'ok', { held: true, holder: SA, holder_token: 3 }, 410]]);
  assert.deepEqual(checkNoOrphanGrants(noCleanup), []);
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

test('resource: stale tokens accepted and lost updates are violations with fencing, counted without', () => {
  const e = (seq: number, op: 'read' | 'write', token: number, accepted: boolean, before: number, extra: Partial<ResourceLogEntry> = {}): ResourceLogEntry => ({ seq, t: seq, op, lock: 'L', token, accepted, before, highest: 0, ...extra });
  const clean = [e(0, 'read', 5, true, 0), e(1, 'write', 5, true, 0, { value: 1, read: 0, lost: false }), e(2, 'write', 4, false, 1, { value: 9, read: 0 })];
  const r = checkResource(clean, true);
  assert.equal(r.violations.length, 0);
  assert.equal(r.rejected, 1);
  const lost = [e(0, 'write', 6, true, 0, { value: 1, read: 0, lost: false }), e(1, 'write', 5, true, 1, { value: 1, read: 0, lost: true })];
  assert.equal(checkResource(lost, true).violations.length, 2); // stale token accepted + lost update
  const control = checkResource(lost, false);
  assert.equal(control.violations.length, 0);
  assert.equal(control.lostUpdates, 1);
});

test('durability: a lock back under an older token after the crash is caught', () => {
  const crash = { variant: 'kill-all', detail: '', start: 100, end: 200 };
  const ok = ops([
    ['c1', 'acquire', { lock: 'L', session: SA }, 0, 'ok', { token: 5 }, 10],
    ['probe', 'read', { lock: 'L' }, 300, 'ok', { held: true, holder: SA, holder_token: 5 }, 310],
    ['c2', 'acquire', { lock: 'M', session: SB }, 320, 'ok', { token: 9 }, 330],
  ]);
  assert.deepEqual(checkDurability(ok, [crash]), []);
  const lost = ops([
    ['c1', 'acquire', { lock: 'L', session: SA }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'release', { lock: 'L', session: SA, token: 5 }, 20, 'ok', {}, 30],
    ['c2', 'acquire', { lock: 'L', session: SB }, 40, 'ok', { token: 7 }, 50],
    ['probe', 'read', { lock: 'L' }, 300, 'ok', { held: true, holder: SA, holder_token: 5 }, 310],
    ['c2', 'acquire', { lock: 'M', session: SB }, 320, 'ok', { token: 6 }, 330],
  ]);
  const v = checkDurability(lost, [crash]);
  assert.equal(v.length, 3, v.join('\n')); // older token, released token back, token counter rolled back
});

test('liveness: recovery is the time from a heal to the next grant, against a bound', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'L', session: SA }, 900, 'ok', { token: 5 }, 1500],
    ['c1', 'acquire', { lock: 'L', session: SA }, 9000, 'ok', { token: 6 }, 9100],
  ]);
  const rs = recoveries(h, [{ variant: 'kill-leader', detail: '', start: 0, end: 1000 }, { variant: 'pause-leader', detail: '', start: 2000, end: 3000 }], 20_000);
  assert.deepEqual(rs.map((r) => r.recoveryMs), [500, 6100]);
  assert.equal(checkLiveness(rs, 5000).length, 1);
});

test('leader changes: every election after the first needs a fault active or healed within the grace', () => {
  const faults = [
    { variant: 'kill-all', detail: '', start: 10_000, end: 15_000 },
    { variant: 'partition-leader', detail: '', start: 30_000, end: 34_000 },
  ];
  const grace = 4000; // 2 × a maximum election timeout of 2 s
  // forming the cluster, an election after the restart, one during the partition, one
  // just inside the grace after its heal, and two leaders logging the same term once
  const fine = [
    { t: 1500, node: 'n1', term: 1 },
    { t: 17_000, node: 'n2', term: 2 },
    { t: 31_000, node: 'n3', term: 3 },
    { t: 37_900, node: 'n1', term: 4 },
    { t: 37_950, node: 'n1', term: 4 },
  ];
  assert.deepEqual(checkLeaderChanges(fine, faults, grace, 60_000), []);
  // the pattern: a second election 1.6 s after the leader of the restart took
  // office would be inside the grace; one at +14 s after the heal, and one in the
  // quiet middle of the run, are not
  const needless = [...fine, { t: 29_000, node: 'n2', term: 5 }, { t: 50_000, node: 'n3', term: 6 }];
  const v = checkLeaderChanges(needless, faults, grace, 60_000);
  assert.equal(v.length, 2, v.join('\n'));
  assert.match(v[0]!, /n2 became leader of term 5 at t=29000; the last fault \(kill-all\) healed at t=15000, 14000 ms before/);
  assert.match(v[1]!, /term 6 at t=50000; the last fault \(partition-leader\)/);
  // a second election before any fault is one too; after the run's end nothing counts
  assert.match(checkLeaderChanges([{ t: 1000, node: 'n1', term: 1 }, { t: 5000, node: 'n2', term: 2 }], faults, grace, 60_000)[0]!, /no fault had happened yet/);
  assert.deepEqual(checkLeaderChanges([{ t: 1000, node: 'n1', term: 1 }, { t: 70_000, node: 'n2', term: 2 }], faults, grace, 60_000), []);
});

test('leader changes: elections are read from pino lines on the run clock, torn lines skipped', () => {
  const log = [
    JSON.stringify({ level: 30, time: 1_000_500, node: 'n2', role: 'candidate', term: 3, leader: null, msg: 'role changed' }),
    JSON.stringify({ level: 30, time: 1_000_700, node: 'n2', role: 'leader', term: 3, leader: 'n2', msg: 'role changed' }),
    JSON.stringify({ level: 30, time: 1_000_800, node: 'n2', msg: 'node started' }),
    '{"level":30,"time":1000900,"node":"n2","role":"leader","term":4,"msg":"role chan', // cut by kill -9
  ].join('\n');
  assert.deepEqual(electionsInLog('n2', log, 1_000_000), [{ t: 700, node: 'n2', term: 3 }]);
});

test('memory: the bound is per node', () => {
  const rss = new Map<string, [number, number][]>([['n1', [[0, 100 * 1048576]]], ['n2', [[0, 600 * 1048576]]]]);
  const r = checkMemory(rss, 400 * 1048576);
  assert.deepEqual(r.maxMb, { n1: 100, n2: 600 });
  assert.equal(r.violations.length, 1);
});

test('nemesis schedule: seeded, every category in the first round, once-per-run faults once', () => {
  for (const seed of [1, 2, 3, 99]) {
    const a = schedule(seededRng(seed), FAULT_CATEGORIES, 3, 50);
    assert.deepEqual(a, schedule(seededRng(seed), FAULT_CATEGORIES, 3, 50), `seed ${seed} replays`);
    assert.deepEqual(new Set(a.slice(0, FAULT_CATEGORIES.length).map(categoryOf)), new Set(FAULT_CATEGORIES));
    for (const once of ONCE_PER_RUN) assert.equal(a.filter((v) => v === once).length, 1);
  }
  assert.ok(schedule(seededRng(5), ['partition'], 5, 40).includes('partition-ring'));
  // --emphasise kill-all: once more in every round after the first
  const k = schedule(seededRng(5), ['kill'], 3, 41, ['kill-all']);
  assert.equal(k.filter((v) => v === 'kill-all').length, 1 + 40 / 4); // rounds of kill-one, kill-leader, kill-minority, kill-all
  assert.ok(!schedule(seededRng(5), ['partition'], 3, 40).includes('partition-ring'));
});

test('followers behind: a member far behind for 20 s with no fault is caught; one behind during a fault, or catching up, is not', () => {
  const o = { minLag: 100, minMs: 20_000, graceMs: 10_000 };
  const samples = (from: number, to: number, lag: (t: number) => number) => {
    const out: { t: number; lags: Record<string, number> }[] = [];
    for (let t = from; t <= to; t += 3000) out.push({ t, lags: { n1: 0, n2: lag(t) } });
    return out;
  };
  const stuck = checkFollowersBehind(samples(0, 40_000, () => 150), [], o);
  assert.equal(stuck.violations.length, 1);
  assert.match(stuck.violations[0]!, /follower behind: n2 was 150–150 entries behind/);
  // the same while a fault was on (a paused or partitioned node): not the leader's doing
  assert.deepEqual(checkFollowersBehind(samples(0, 40_000, () => 150), [{ variant: 'pause-follower', detail: '', start: 0, end: 35_000 }], o).violations, []);
  // far behind, but catching up within a few seconds
  assert.deepEqual(checkFollowersBehind(samples(0, 40_000, (t) => (t % 12_000 < 6000 ? 150 : 0)), [], o).violations, []);
});

