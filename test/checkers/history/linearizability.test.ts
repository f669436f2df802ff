// Linearizability of every primitive against the one reference model (linearizability.ts,
// test/model/history-model.ts), on hand-written histories: for each of shared locks,
// semaphores (with resize), elections, revocation and max hold, histories a correct
// service can produce pass and the broken ones are caught. (The exclusive lock's own cases
// are in wgl.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkLinearizable } from './linearizability.js';
import { H } from './history-builder.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);
const SC = 'c'.repeat(32);

function base(): H {
  return new H().add('c1', 'open', {}, 0, 'ok', { session: SA }, 1).add('c2', 'open', {}, 0, 'ok', { session: SB }, 1).add('c3', 'open', {}, 0, 'ok', { session: SC }, 1);
}

const valid = (h: H): boolean | 'unknown' => checkLinearizable(h.ops()).valid;
function caught(h: H, re?: RegExp): void {
  const r = checkLinearizable(h.ops());
  assert.equal(r.valid, false, 'a broken history passed');
  if (re) assert.match(r.perLock.find((p) => p.detail)!.detail!, re);
}

// ---- shared locks -----------------------------------------------------------------------

const S = 'js-0';

test('shared locks: readers share, a writer follows them, reads show every holder', () => {
  const h = base()
    .add('c1', 'acquire', { lock: S, session: SA, mode: 'shared' }, 10, 'ok', { token: 5 }, 12)
    .add('c2', 'acquire', { lock: S, session: SB, mode: 'shared' }, 11, 'ok', { token: 6 }, 13)
    .add('r', 'read', { lock: S }, 14, 'ok', { held: true, grants: [{ session: SA, token: 5, mode: 'shared' }, { session: SB, token: 6, mode: 'shared' }] }, 15)
    // a writer queued behind them, granted when the last share goes
    .add('c3', 'acquire', { lock: S, session: SC, mode: 'exclusive', wait_ms: 1000 }, 16, 'ok', { token: 9 }, 40)
    .add('c1', 'release', { lock: S, session: SA, token: 5 }, 20, 'ok', {}, 21)
    .add('c2', 'release', { lock: S, session: SB, token: 6 }, 30, 'ok', {}, 31)
    .add('r', 'read', { lock: S }, 41, 'ok', { held: true, holder: SC, holder_token: 9, grants: [{ session: SC, token: 9, mode: 'exclusive' }] }, 42);
  assert.equal(valid(h), true);
});

test('shared locks: a writer beside a reader is caught, and so is a read that misses a share', () => {
  caught(
    base()
      .add('c1', 'acquire', { lock: S, session: SA, mode: 'shared' }, 10, 'ok', { token: 5 }, 12)
      .add('c3', 'acquire', { lock: S, session: SC, mode: 'exclusive' }, 20, 'ok', { token: 7 }, 22)
      .add('c1', 'release', { lock: S, session: SA, token: 5 }, 30, 'ok', {}, 31),
    /could not place/,
  );
  caught(
    base()
      .add('c1', 'acquire', { lock: S, session: SA, mode: 'shared' }, 10, 'ok', { token: 5 }, 12)
      .add('c2', 'acquire', { lock: S, session: SB, mode: 'shared' }, 13, 'ok', { token: 6 }, 14)
      .add('r', 'read', { lock: S }, 20, 'ok', { held: true, grants: [{ session: SB, token: 6, mode: 'shared' }] }, 21)
      .add('c1', 'release', { lock: S, session: SA, token: 5 }, 30, 'ok', {}, 31),
  );
});

test('shared locks: a share refused while only shares are held is allowed (a writer may wait ahead); an exclusive refused on a free lock is not', () => {
  assert.equal(
    valid(base()
      .add('c1', 'acquire', { lock: S, session: SA, mode: 'shared' }, 10, 'ok', { token: 5 }, 12)
      .add('c2', 'acquire', { lock: S, session: SB, mode: 'shared' }, 20, 'fail', { code: 'lock_held' }, 21)),
    true,
  );
  caught(base().add('c3', 'acquire', { lock: S, session: SC, mode: 'exclusive' }, 20, 'fail', { code: 'lock_held' }, 21));
});

// ---- semaphores -------------------------------------------------------------------------

const M = 'jm-0';

test('semaphores: permits up to the limit, reads count them, a release frees room', () => {
  const h = base()
    .add('c1', 'sem-acquire', { lock: M, session: SA, permits: 1, limit: 2 }, 10, 'ok', { token: 5, permits: 1, limit: 2 }, 12)
    .add('c2', 'sem-acquire', { lock: M, session: SB, permits: 1, limit: 2 }, 11, 'ok', { token: 6, permits: 1, limit: 2 }, 13)
    .add('r', 'sem-read', { lock: M }, 14, 'ok', { limit: 2, in_use: 2, holders: [{ session: SA, token: 5, permits: 1 }, { session: SB, token: 6, permits: 1 }] }, 15)
    .add('c3', 'sem-acquire', { lock: M, session: SC, permits: 2, limit: 2 }, 16, 'fail', { code: 'semaphore_full' }, 17)
    .add('c1', 'sem-release', { lock: M, session: SA }, 20, 'ok', {}, 21)
    .add('c2', 'sem-release', { lock: M, session: SB }, 22, 'ok', {}, 23)
    .add('c3', 'sem-acquire', { lock: M, session: SC, permits: 2, limit: 2, wait_ms: 500 }, 24, 'ok', { token: 9, permits: 2, limit: 2 }, 26);
  assert.equal(valid(h), true);
});

test('semaphores: more permits than the limit, a read that miscounts, a full answer on an idle semaphore are caught', () => {
  caught(
    base()
      .add('c1', 'sem-acquire', { lock: M, session: SA, permits: 1, limit: 2 }, 10, 'ok', { token: 5, permits: 1 }, 12)
      .add('c2', 'sem-acquire', { lock: M, session: SB, permits: 2, limit: 2 }, 20, 'ok', { token: 6, permits: 2 }, 22)
      .add('c1', 'keepalive', { session: SA }, 30, 'ok', {}, 31),
  );
  caught(
    base()
      .add('c1', 'sem-acquire', { lock: M, session: SA, permits: 1, limit: 2 }, 10, 'ok', { token: 5, permits: 1 }, 12)
      .add('r', 'sem-read', { lock: M }, 14, 'ok', { limit: 2, in_use: 2, holders: [{ session: SA, token: 5, permits: 2 }] }, 15),
  );
  caught(base().add('c1', 'sem-acquire', { lock: M, session: SA, permits: 1, limit: 2 }, 10, 'fail', { code: 'semaphore_full' }, 12));
});

test('semaphores: a resize lets a third permit in, never takes permits away, and a limit mismatch must name the limit in force', () => {
  const grown = base()
    .add('c1', 'sem-acquire', { lock: M, session: SA, permits: 2, limit: 2 }, 10, 'ok', { token: 5, permits: 2 }, 12)
    .add('op', 'sem-limit', { lock: M, limit: 3 }, 13, 'ok', { limit: 3 }, 14)
    .add('c2', 'sem-acquire', { lock: M, session: SB, permits: 1, limit: 3 }, 20, 'ok', { token: 6, permits: 1 }, 22)
    .add('c3', 'sem-acquire', { lock: M, session: SC, permits: 1, limit: 2 }, 23, 'fail', { code: 'limit_mismatch', limit: 3 }, 24)
    // shrink below what is held: nobody loses permits, nobody new gets in
    .add('op', 'sem-limit', { lock: M, limit: 1 }, 30, 'ok', { limit: 1 }, 31)
    .add('r', 'sem-read', { lock: M }, 32, 'ok', { limit: 1, in_use: 3, holders: [{ session: SA, token: 5, permits: 2 }, { session: SB, token: 6, permits: 1 }] }, 33);
  assert.equal(valid(grown), true);
  // without the resize the third permit is over the limit
  caught(
    base()
      .add('c1', 'sem-acquire', { lock: M, session: SA, permits: 2, limit: 2 }, 10, 'ok', { token: 5, permits: 2 }, 12)
      .add('c2', 'sem-acquire', { lock: M, session: SB, permits: 1, limit: 3 }, 20, 'ok', { token: 6, permits: 1 }, 22)
      .add('c1', 'keepalive', { session: SA }, 30, 'ok', {}, 31), // SA still held its permits
  );
  caught(
    base()
      .add('c1', 'sem-acquire', { lock: M, session: SA, permits: 2, limit: 2 }, 10, 'ok', { token: 5, permits: 2 }, 12)
      .add('c3', 'sem-acquire', { lock: M, session: SC, permits: 1, limit: 3 }, 23, 'fail', { code: 'limit_mismatch', limit: 3 }, 24),
  );
});

test('semaphores: a wait outlives a resize and is granted under the limit in force, which its answer names (jepsen-lite seed 9101, jm-1)', () => {
  // SB waits for 2 permits under limit 3 while SA holds 2; the limit shrinks to 2, SA
  // releases, and SB is granted under limit 2 (docs/contract.md: resizing never ends a wait)
  const waited = (answered: number): H =>
    base()
      .add('c1', 'sem-acquire', { lock: M, session: SA, permits: 2, limit: 3 }, 10, 'ok', { token: 5, permits: 2, limit: 3 }, 12)
      .add('c2', 'sem-acquire', { lock: M, session: SB, permits: 2, limit: 3, wait_ms: 900 }, 20, 'ok', { token: 7, permits: 2, limit: answered }, 60)
      .add('op', 'sem-limit', { lock: M, limit: 2 }, 30, 'ok', { limit: 2 }, 32)
      .add('r1', 'sem-read', { lock: M }, 33, 'ok', { limit: 2, in_use: 2, holders: [{ session: SA, token: 5, permits: 2 }] }, 34)
      .add('c1', 'sem-release', { lock: M, session: SA }, 40, 'ok', {}, 42)
      .add('r2', 'sem-read', { lock: M }, 61, 'ok', { limit: 2, in_use: 2, holders: [{ session: SB, token: 7, permits: 2 }] }, 62);
  assert.equal(valid(waited(2)), true);
  // the grant came after the shrink: an answer naming the old limit is not what happened
  caught(waited(3));
});

// ---- elections --------------------------------------------------------------------------

const E = 'je-0';

test('elections: a leader proclaims, reads show its value, it resigns and the next campaigner leads', () => {
  const h = base()
    .add('c1', 'campaign', { lock: E, session: SA, text: 'a:1' }, 10, 'ok', { token: 5 }, 12)
    .add('c2', 'campaign', { lock: E, session: SB, text: 'b:1', wait_ms: 2000 }, 11, 'ok', { token: 8 }, 50)
    .add('c1', 'proclaim', { lock: E, session: SA, token: 5, text: 'a:2' }, 20, 'ok', {}, 21)
    .add('r', 'el-read', { lock: E }, 22, 'ok', { held: true, holder: SA, holder_token: 5, text: 'a:2' }, 23)
    .add('c1', 'resign', { lock: E, session: SA, token: 5 }, 30, 'ok', {}, 31)
    .add('c1', 'proclaim', { lock: E, session: SA, token: 5, text: 'a:3' }, 51, 'fail', { code: 'not_holder' }, 52)
    .add('r', 'el-read', { lock: E }, 53, 'ok', { held: true, holder: SB, holder_token: 8, text: 'b:1' }, 54);
  assert.equal(valid(h), true);
});

test('elections: two leaders, a proclaim after resigning, a read of a value nobody proclaimed are caught', () => {
  caught(
    base()
      .add('c1', 'campaign', { lock: E, session: SA, text: 'a:1' }, 10, 'ok', { token: 5 }, 12)
      .add('c2', 'campaign', { lock: E, session: SB, text: 'b:1' }, 20, 'ok', { token: 6 }, 22)
      .add('c1', 'proclaim', { lock: E, session: SA, token: 5, text: 'a:2' }, 30, 'ok', {}, 31),
  );
  caught(
    base()
      .add('c1', 'campaign', { lock: E, session: SA, text: 'a:1' }, 10, 'ok', { token: 5 }, 12)
      .add('c1', 'resign', { lock: E, session: SA, token: 5 }, 20, 'ok', {}, 21)
      .add('c1', 'proclaim', { lock: E, session: SA, token: 5, text: 'a:2' }, 30, 'ok', {}, 31),
  );
  caught(
    base()
      .add('c1', 'campaign', { lock: E, session: SA, text: 'a:1' }, 10, 'ok', { token: 5 }, 12)
      .add('r', 'el-read', { lock: E }, 22, 'ok', { held: true, holder: SA, holder_token: 5, text: 'a:9' }, 23),
  );
});

// ---- revocation and max hold ------------------------------------------------------------

test('revocation: a revoked leader is deposed at the revoke, and its proclaim may not succeed after it', () => {
  const ok = base()
    .add('c1', 'campaign', { lock: E, session: SA, text: 'a:1' }, 10, 'ok', { token: 5 }, 12)
    .add('probe', 'revoke', { lock: E, session: SA }, 20, 'ok', { revoked: [{ session: SA, token: 5 }] }, 22)
    .add('c1', 'proclaim', { lock: E, session: SA, token: 5, text: 'a:2' }, 30, 'fail', { code: 'not_holder' }, 31)
    .add('c2', 'campaign', { lock: E, session: SB, text: 'b:1' }, 32, 'ok', { token: 9 }, 34);
  assert.equal(valid(ok), true);
  caught(
    base()
      .add('c1', 'campaign', { lock: E, session: SA, text: 'a:1' }, 10, 'ok', { token: 5 }, 12)
      .add('probe', 'revoke', { lock: E, session: SA }, 20, 'ok', { revoked: [{ session: SA, token: 5 }] }, 22)
      .add('c1', 'proclaim', { lock: E, session: SA, token: 5, text: 'a:2' }, 30, 'ok', {}, 31),
  );
  // a revoke that names a grant the lock does not have
  caught(
    base()
      .add('c1', 'acquire', { lock: 'jl-0', session: SA }, 10, 'ok', { token: 5 }, 12)
      .add('probe', 'revoke', { lock: 'jl-0' }, 20, 'ok', { revoked: [{ session: SB, token: 5 }] }, 22),
  );
  // a semaphore's permits revoked: room for another holder
  assert.equal(
    valid(base()
      .add('c1', 'sem-acquire', { lock: M, session: SA, permits: 2, limit: 2 }, 10, 'ok', { token: 5, permits: 2 }, 12)
      .add('probe', 'revoke', { lock: M, target: 'semaphore' }, 20, 'ok', { revoked: [{ session: SA, token: 5 }] }, 22)
      .add('c2', 'sem-acquire', { lock: M, session: SB, permits: 2, limit: 2 }, 30, 'ok', { token: 7, permits: 2 }, 31)),
    true,
  );
});

test('max hold: a grant asked with max_hold_ms may end by itself; one without may not', () => {
  const lock = (maxHold: boolean): H =>
    base()
      .add('c1', 'acquire', { lock: 'jl-0', session: SA, ...(maxHold ? { max_hold_ms: 300 } : {}) }, 10, 'ok', { token: 5 }, 12)
      .add('c2', 'acquire', { lock: 'jl-0', session: SB, wait_ms: 1000 }, 20, 'ok', { token: 7 }, 320)
      .add('c1', 'keepalive', { session: SA }, 400, 'ok', {}, 401)
      .add('c1', 'release', { lock: 'jl-0', session: SA, token: 5 }, 402, 'fail', { code: 'not_holder' }, 403);
  assert.equal(valid(lock(true)), true);
  caught(lock(false));
  const election = (maxHold: boolean): H =>
    base()
      .add('c1', 'campaign', { lock: E, session: SA, text: 'a:1', ...(maxHold ? { max_hold_ms: 300 } : {}) }, 10, 'ok', { token: 5 }, 12)
      .add('c2', 'campaign', { lock: E, session: SB, text: 'b:1', wait_ms: 1000 }, 20, 'ok', { token: 7 }, 320)
      .add('c1', 'keepalive', { session: SA }, 400, 'ok', {}, 401);
  assert.equal(valid(election(true)), true);
  caught(election(false));
});

test('an indeterminate grant gets its token from a later answer, which must be above the earlier ones', () => {
  const seen = (t: number): H =>
    base()
      .add('c1', 'acquire', { lock: 'jl-0', session: SA }, 10, 'ok', { token: 5 }, 12)
      .add('c1', 'release', { lock: 'jl-0', session: SA, token: 5 }, 13, 'ok', {}, 14)
      .add('c2', 'sem-acquire', { lock: M, session: SB, permits: 1, limit: 2 }, 15, 'ok', { token: 6, permits: 1 }, 16)
      .add('c3', 'campaign', { lock: E, session: SC, text: 'c:1' }, 20, 'info', { code: 'timeout' }, 30)
      .add('r', 'el-read', { lock: E }, 40, 'ok', { held: true, holder: SC, holder_token: t, text: 'c:1' }, 41)
      .add('c3', 'proclaim', { lock: E, session: SC, token: t, text: 'c:2' }, 42, 'ok', {}, 43)
      .add('r', 'el-read', { lock: E }, 44, 'ok', { held: true, holder: SC, holder_token: t, text: 'c:2' }, 45);
  assert.equal(valid(seen(12)), true);
  // the same grant seen with two tokens
  caught(seen(12).add('r', 'el-read', { lock: E }, 50, 'ok', { held: true, holder: SC, holder_token: 13, text: 'c:2' }, 51));
});
