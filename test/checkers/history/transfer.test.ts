// The transfer workload's checkers on hand-written bank logs and histories: each accepts a
// correct one and names the lost, duplicated, stale or unconserved transfer in a broken one;
// the lock-set projection and checkLockSets on hand-written acquire-all answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkTransfers } from './transfer.js';
import { checkLockSets, projectLockSets } from './lock-sets.js';
import { checkLinearizable } from './linearizability.js';
import { checkLeaseSafety } from './lease-safety.js';
import type { BankLogEntry } from './resource-logs.js';

const ACC = ['ja-0', 'ja-1', 'ja-2'];
const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);

/** a bank entry as resource-proc.ts writes it: balances after = read − / + amount when accepted */
function entry(seq: number, id: string, from: string, to: string, amount: number, tokens: [number, number], read: [number, number], before: [number, number], accepted = true, highest: [number, number] = [0, 0]): BankLogEntry {
  const after = accepted ? [read[0] - amount, read[1] + amount] : before;
  return { seq, t: seq * 10, id, from, to, amount, tokens: { [from]: tokens[0], [to]: tokens[1] }, read: { [from]: read[0], [to]: read[1] }, accepted, highest: { [from]: highest[0], [to]: highest[1] }, before: { [from]: before[0], [to]: before[1] }, after: { [from]: after[0]!, [to]: after[1]! } };
}

const sent = (id: string, from: string, to: string, amount: number, type: 'ok' | 'fail' | 'info' = 'ok', code?: string) =>
  ['c1', 'transfer', { transfer_id: id, from, to, amount }, 0, type, code ? { code } : {}, 5] as const;

test('transfers: a correct log conserves the total and applies each transfer once', () => {
  const log = [entry(0, 't1', 'ja-0', 'ja-1', 10, [5, 6], [100, 100], [100, 100]), entry(1, 't2', 'ja-1', 'ja-2', 30, [8, 9], [110, 100], [110, 100]), entry(2, 't3', 'ja-1', 'ja-0', 5, [7, 10], [80, 90], [80, 90], false, [8, 5])];
  const h = ops([sent('t1', 'ja-0', 'ja-1', 10) as never, sent('t2', 'ja-1', 'ja-2', 30) as never, sent('t3', 'ja-1', 'ja-0', 5, 'fail', 'stale_token') as never]);
  const r = checkTransfers(h, log, ACC, 100, true);
  assert.deepEqual(r.violations, []);
  assert.equal(r.accepted, 2);
  assert.equal(r.rejected, 1);
  assert.equal(r.total, 300);
});

test('transfers: two holders of one account at once — the second write overwrites the first transfer (lost, total not conserved)', () => {
  // t1 and t2 both read ja-0 = 100 (two holders of ja-0 at once)
  const log = [entry(0, 't1', 'ja-0', 'ja-1', 10, [5, 6], [100, 100], [100, 100]), entry(1, 't2', 'ja-0', 'ja-2', 20, [7, 8], [100, 100], [90, 100])];
  const r = checkTransfers([], log, ACC, 100, true);
  assert.equal(r.lost, 1);
  assert.ok(r.violations.some((v) => /transfer lost: t2 .* wrote ja-0 = 80 from a read of 100, but the accepted transfers say 70: the write of t1/.test(v)), r.violations.join('\n'));
  assert.ok(r.violations.some((v) => /money not conserved: the accounts hold 310/.test(v)), r.violations.join('\n'));
  // the control run (fencing off) counts it and does not fail
  const c = checkTransfers(ops([sent('t1', 'ja-0', 'ja-1', 10) as never, sent('t2', 'ja-0', 'ja-2', 20) as never]), log, ACC, 100, false);
  assert.equal(c.lost, 1);
  assert.deepEqual(c.violations, []);
});

test('transfers: a transfer applied twice, a stale token accepted, answers that disagree with the bank', () => {
  const dup = [entry(0, 't1', 'ja-0', 'ja-1', 10, [5, 6], [100, 100], [100, 100]), entry(1, 't1', 'ja-0', 'ja-1', 10, [5, 6], [90, 110], [90, 110])];
  assert.ok(checkTransfers([], dup, ACC, 100, true).violations.some((v) => /t1 .* applied twice .*duplicated/.test(v)));
  const stale = [entry(0, 't1', 'ja-0', 'ja-1', 10, [9, 6], [100, 100], [100, 100]), entry(1, 't2', 'ja-0', 'ja-2', 10, [4, 8], [90, 100], [90, 100])];
  assert.ok(checkTransfers([], stale, ACC, 100, true).violations.some((v) => /bank accepted token 4 on ja-0 after token 9/.test(v)));
  const log = [entry(0, 't1', 'ja-0', 'ja-1', 10, [5, 6], [100, 100], [100, 100])];
  const lostAck = checkTransfers(ops([sent('t1', 'ja-0', 'ja-1', 10) as never, sent('t9', 'ja-1', 'ja-2', 3) as never]), log, ACC, 100, true);
  assert.ok(lostAck.violations.some((v) => /t9 .* answered ok but the bank never applied it/.test(v)), lostAck.violations.join('\n'));
  const refusedButApplied = checkTransfers(ops([sent('t1', 'ja-0', 'ja-1', 10, 'fail', 'stale_token') as never]), log, ACC, 100, true);
  assert.ok(refusedButApplied.violations.some((v) => /answered stale_token but the bank applied it/.test(v)));
  assert.ok(checkTransfers([], log, ACC, 100, true).violations.some((v) => /applied t1, which no client sent/.test(v)));
  // a bank that moved money out of nowhere: the total breaks without a lost write
  const bad = entry(0, 't1', 'ja-0', 'ja-1', 10, [5, 6], [100, 100], [100, 100]);
  bad.after['ja-1'] = 111;
  assert.ok(checkTransfers(ops([sent('t1', 'ja-0', 'ja-1', 10) as never]), [bad], ACC, 100, true).violations.some((v) => /not conserved|transfer lost/.test(v)));
});

test('lock sets: an acquire-all answer must grant every name once, with distinct tokens', () => {
  const good = ops([['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA }, 0, 'ok', { set: [{ name: 'ja-0', token: 5 }, { name: 'ja-1', token: 6 }] }, 10]]);
  assert.deepEqual(checkLockSets(good), []);
  const partly = ops([['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA }, 0, 'ok', { set: [{ name: 'ja-0', token: 5 }] }, 10]]);
  assert.match(checkLockSets(partly)[0]!, /held partly/);
  const oneToken = ops([['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA }, 0, 'ok', { set: [{ name: 'ja-0', token: 5 }, { name: 'ja-1', token: 5 }] }, 10]]);
  assert.match(checkLockSets(oneToken)[0]!, /one token for two names/);
});

test('lock sets projected per name: a set granted while another session holds one of its names is not linearizable, and breaks the lease', () => {
  const fine = ops([
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA, wait_ms: 0 }, 0, 'ok', { set: [{ name: 'ja-0', token: 5 }, { name: 'ja-1', token: 6 }] }, 10],
    ['c1', 'release-all', { names: ['ja-0', 'ja-1'], session: SA }, 20, 'ok', { released: ['ja-0', 'ja-1'] }, 30],
    ['c2', 'acquire-all', { names: ['ja-1', 'ja-2'], session: SB, wait_ms: 0 }, 40, 'ok', { set: [{ name: 'ja-1', token: 7 }, { name: 'ja-2', token: 8 }] }, 50],
    ['c3', 'read', { lock: 'ja-1' }, 60, 'ok', { held: true, holder: SB, holder_token: 7 }, 70],
    ['c2', 'release-all', { names: ['ja-1', 'ja-2'], session: SB }, 80, 'ok', { released: ['ja-1', 'ja-2'] }, 90],
  ]);
  const p = projectLockSets(fine);
  assert.equal(p.filter((o) => o.f === 'acquire').length, 4);
  assert.equal(checkLinearizable(p).valid, true);
  assert.deepEqual(checkLeaseSafety(p, 2000), []);
  // SB's set granted ja-1 while SA still held it (no release between)
  const twoHolders = ops([
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA, wait_ms: 0 }, 0, 'ok', { set: [{ name: 'ja-0', token: 5 }, { name: 'ja-1', token: 6 }] }, 10],
    ['c1', 'keepalive', { session: SA }, 15, 'ok', {}, 18],
    ['c2', 'acquire-all', { names: ['ja-1', 'ja-2'], session: SB, wait_ms: 0 }, 40, 'ok', { set: [{ name: 'ja-1', token: 7 }, { name: 'ja-2', token: 8 }] }, 50],
    ['c1', 'release-all', { names: ['ja-0', 'ja-1'], session: SA }, 60, 'ok', { released: ['ja-0', 'ja-1'] }, 70],
  ]);
  const q = projectLockSets(twoHolders);
  const lin = checkLinearizable(q);
  assert.equal(lin.valid, false);
  assert.equal(lin.perLock.find((x) => x.lock === 'ja-1')?.result, 'illegal');
  assert.equal(lin.perLock.find((x) => x.lock === 'ja-0')?.result, 'ok');
  assert.ok(checkLeaseSafety(q, 2000).length > 0);
  // a release-all that leaves a name out: that name was not held (a not_holder release there)
  const r = projectLockSets(ops([['c1', 'release-all', { names: ['ja-0', 'ja-1'], session: SA }, 0, 'ok', { released: ['ja-0'] }, 10]]));
  assert.deepEqual(r.map((o) => [o.input.lock, o.type, o.output.code]), [['ja-0', 'ok', undefined], ['ja-1', 'fail', 'not_holder']]);
});

test('lock sets projected per name: a set answered session_not_found may have granted first (seen by a read before the answer)', () => {
  const h = ops([
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-2'], session: SA, wait_ms: 0 }, 0, 'ok', { set: [{ name: 'ja-0', token: 5 }, { name: 'ja-2', token: 6 }] }, 10],
    ['c1', 'release-all', { names: ['ja-0', 'ja-2'], session: SA }, 20, 'ok', { released: ['ja-0', 'ja-2'] }, 30],
    ['c3', 'read', { lock: 'ja-2' }, 35, 'ok', { held: false }, 38],
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-2'], session: SA, wait_ms: 500 }, 40, 'fail', { code: 'session_not_found' }, 90],
    ['c3', 'read', { lock: 'ja-2' }, 50, 'ok', { held: true, holder: SA, holder_token: 9 }, 60],
    ['c3', 'read', { lock: 'ja-2' }, 100, 'ok', { held: false }, 110],
  ]);
  assert.equal(checkLinearizable(projectLockSets(h)).valid, true);
});
