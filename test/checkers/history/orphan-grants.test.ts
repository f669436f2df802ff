// orphan-grants.ts on small hand-written histories: it must accept a correct history and name
// the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkNoOrphanGrants } from './orphan-grants.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);

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
