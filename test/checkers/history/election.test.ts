// The election checker on small hand-written histories and resource logs: a clean
// succession of leaders (resign, revocation, max hold, a paused leader refused by the
// resource) passes; two leaders at once, two writers under one token, a write under
// someone else's token, a deposed leader's write accepted after a newer token, a stale
// leader read and tokens out of order across elections and locks are each caught.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Op } from './history.js';
import { ops } from './history-rows.js';
import { checkElections } from './election.js';
import { checkTokenOrder } from './token-order.js';
import type { ResourceLogEntry } from './resource-logs.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);
const SC = 'c'.repeat(32);
const TTL = 2000;
const E = 'je-0';

/** resource log rows: [t, op, token, writer, accepted?, lost?] on the election's register */
function res(rows: [number, 'read' | 'write', number, string | undefined, boolean?, boolean?][]): ResourceLogEntry[] {
  return rows.map(([t, op, token, writer, accepted, lost], seq) => ({
    seq,
    t,
    op,
    lock: E,
    token,
    accepted: accepted ?? true,
    before: 0,
    highest: 0,
    ...(op === 'write' ? { value: 1, read: 0, lost: lost ?? false } : {}),
    ...(writer !== undefined ? { writer } : {}),
  }));
}

test('elections: leaders one after another (resign, revocation, max hold) pass; a paused leader refused by the resource is fine', () => {
  const h = ops([
    ['c1', 'campaign', { lock: E, session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'resign', { lock: E, session: SA, token: 5 }, 300, 'ok', {}, 310],
    ['c2', 'campaign', { lock: E, session: SB, wait_ms: 1000 }, 100, 'ok', { token: 6 }, 320],
    // the nemesis revokes B; C, waiting, gets it
    ['probe', 'revoke', { lock: E, session: SB }, 500, 'ok', { revoked: [{ session: SB, token: 6 }] }, 510],
    ['c3', 'campaign', { lock: E, session: SC, wait_ms: 1000, max_hold_ms: 400 }, 450, 'ok', { token: 7 }, 520],
    ['c2', 'proclaim', { lock: E, session: SB, token: 6 }, 600, 'fail', { code: 'not_holder' }, 610],
    // C's max hold (sent at 450 + 400) runs out: A leads again
    ['c1', 'campaign', { lock: E, session: SA, wait_ms: 1000 }, 700, 'ok', { token: 8 }, 900],
    ['c1r', 'el-read', { lock: E }, 950, 'ok', { held: true, holder: SA, holder_token: 8 }, 960],
  ]);
  const log = res([
    [20, 'read', 5, undefined],
    [30, 'write', 5, SA],
    [330, 'read', 6, undefined],
    [340, 'write', 6, SB],
    [530, 'write', 7, SC],
    [540, 'write', 6, SB, false], // B wrote after the revocation: refused (7 seen)
    [910, 'write', 8, SA],
  ]);
  const r = checkElections(h, log, TTL, true);
  assert.deepEqual(r.violations, []);
  assert.equal(r.grants, 4);
  assert.equal(r.leaders, 3);
  assert.equal(r.revoked, 1);
  assert.equal(r.rejected, 1);
  assert.equal(r.maxHoldCampaigns, 1);
  assert.deepEqual(checkTokenOrder(h), []);
});

test('elections: a second leader elected while the first still leads is caught', () => {
  const h = ops([
    ['c1', 'campaign', { lock: E, session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c2', 'campaign', { lock: E, session: SB, wait_ms: 0 }, 100, 'ok', { token: 6 }, 110],
    ['c1', 'resign', { lock: E, session: SA, token: 5 }, 300, 'ok', {}, 310],
  ]);
  const r = checkElections(h, [], TTL, true);
  assert.equal(r.violations.length, 1, r.violations.join('\n'));
  assert.match(r.violations[0]!, /elected bbbbbbbb \(token 6\).*while aaaaaaaa \(token 5\) still led.*two leaders/);
});

test('elections: a revocation only ends the leadership it can have hit, and max hold only from the campaign\'s send', () => {
  // the revocation names another session: A still leads
  const h = ops([
    ['c1', 'campaign', { lock: E, session: SA, wait_ms: 0, max_hold_ms: 5000 }, 0, 'ok', { token: 5 }, 10],
    ['probe', 'revoke', { lock: E, session: SC }, 50, 'fail', { code: 'not_holder' }, 60],
    ['probe', 'revoke', { lock: E, session: SC }, 70, 'ok', { revoked: [] }, 80],
    ['c2', 'campaign', { lock: E, session: SB, wait_ms: 0 }, 100, 'ok', { token: 6 }, 110],
  ]);
  assert.equal(checkElections(h, [], TTL, true).violations.length, 1);
  // a revocation of every grant of the name (no session) sent before: B may lead
  const h2 = ops([
    ['c1', 'campaign', { lock: E, session: SA, wait_ms: 0, max_hold_ms: 5000 }, 0, 'ok', { token: 5 }, 10],
    ['probe', 'revoke', { lock: E }, 70, 'info', { code: 'timeout' }, 80],
    ['c2', 'campaign', { lock: E, session: SB, wait_ms: 0 }, 100, 'ok', { token: 6 }, 110],
  ]);
  assert.deepEqual(checkElections(h2, [], TTL, true).violations, []);
  // max hold 500 ms from the send at 0: a leader at 110 is too early, at 600 fine
  const h3 = (t: number): Op[] =>
    ops([
      ['c1', 'campaign', { lock: E, session: SA, wait_ms: 0, max_hold_ms: 500 }, 0, 'ok', { token: 5 }, 10],
      ['c2', 'campaign', { lock: E, session: SB, wait_ms: 1000 }, 50, 'ok', { token: 6 }, t],
    ]);
  assert.equal(checkElections(h3(110), [], TTL, true).violations.length, 1);
  assert.deepEqual(checkElections(h3(600), [], TTL, true).violations, []);
});

test('elections: the resource accepting two campaigners under one token is caught', () => {
  const h = ops([['c1', 'campaign', { lock: E, session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10]]);
  const r = checkElections(h, res([[20, 'write', 5, SA], [30, 'write', 5, SB]]), TTL, true);
  assert.ok(r.violations.some((v) => /under token 5 from two campaigners, aaaaaaaa .* and bbbbbbbb/.test(v)), r.violations.join('\n'));
  assert.ok(r.violations.some((v) => /from bbbbbbbb, but that token is aaaaaaaa's leadership/.test(v)), r.violations.join('\n'));
});

test("elections: a deposed leader's write accepted after a newer token is caught (with fencing on), and a lost update", () => {
  const h = ops([
    ['c1', 'campaign', { lock: E, session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['probe', 'revoke', { lock: E, session: SA }, 50, 'ok', { revoked: [{ session: SA, token: 5 }] }, 60],
    ['c2', 'campaign', { lock: E, session: SB, wait_ms: 0 }, 100, 'ok', { token: 6 }, 110],
  ]);
  const log = res([[120, 'write', 6, SB], [130, 'write', 5, SA, true, true]]);
  const r = checkElections(h, log, TTL, true);
  assert.ok(r.violations.some((v) => /accepted a write on je-0 with token 5 .*after token 6.*deposed leader/.test(v)), r.violations.join('\n'));
  assert.ok(r.violations.some((v) => /lost update/.test(v)), r.violations.join('\n'));
  // the control run (fencing off) reports neither
  assert.deepEqual(checkElections(h, log, TTL, false).violations, []);
});

test('elections: a read naming a leader older than one already elected is caught', () => {
  const h = ops([
    ['c1', 'campaign', { lock: E, session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'resign', { lock: E, session: SA, token: 5 }, 20, 'ok', {}, 30],
    ['c2', 'campaign', { lock: E, session: SB, wait_ms: 0 }, 40, 'ok', { token: 6 }, 50],
    ['c3r', 'el-read', { lock: E }, 60, 'ok', { held: true, holder: SA, holder_token: 5 }, 70],
  ]);
  const r = checkElections(h, [], TTL, true);
  assert.equal(r.violations.length, 1, r.violations.join('\n'));
  assert.match(r.violations[0]!, /names leader token 5 after token 6 had been elected/);
});

test('elections: a leadership token below a lock grant made before it is caught by the token order', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0 }, 0, 'ok', { token: 9 }, 10],
    ['c2', 'campaign', { lock: E, session: SB, wait_ms: 0 }, 20, 'ok', { token: 8 }, 30],
  ]);
  const v = checkTokenOrder(h);
  assert.equal(v.length, 1, v.join('\n'));
  assert.match(v[0]!, /token 8 \(je-0\) was granted after token 9 \(jl-0\)/);
});
