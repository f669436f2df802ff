// The reused-key checker on hand-written histories: a request under another request's key
// answered 422 passes; answered as a grant (the first request's answer handed out again)
// or with another definite answer fails; and the refusal constrains nothing in the
// linearizability check (a dead session's key is refused too).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkKeyReuse } from './keys.js';
import { checkLinearizable } from './linearizability.js';

const SA = 'a'.repeat(32);
const K = 'k'.repeat(36);

test('reused keys: 422 passes, a grant or another answer fails, undecided outcomes say nothing', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'release', { lock: 'jl-0', session: SA, token: 5 }, 20, 'ok', {}, 30],
    ['c1', 'acquire', { lock: 'jl-1', session: SA, wait_ms: 0, reused_key: K }, 40, 'fail', { code: 'idempotency_key_reused' }, 50],
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0, max_hold_ms: 60_000, reused_key: K }, 60, 'fail', { code: 'unavailable' }, 70],
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0, reused_key: K }, 80, 'info', { code: 'timeout' }, 90],
  ]);
  const r = checkKeyReuse(h);
  assert.deepEqual(r.violations, []);
  assert.equal(r.sent, 3);
  assert.equal(r.refused, 1);
  assert.equal(checkLinearizable(h).valid, true);
  const grant = ops([
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'release', { lock: 'jl-0', session: SA, token: 5 }, 20, 'ok', {}, 30],
    ['c1', 'acquire', { lock: 'jl-1', session: SA, wait_ms: 0, reused_key: K }, 40, 'ok', { token: 5 }, 50],
  ]);
  const v = checkKeyReuse(grant).violations;
  assert.equal(v.length, 1);
  assert.match(v[0]!, /answered as a grant \(token 5\), not 422/);
  // the replayed grant of the same lock, already released: the model cannot place it either
  const same = ops([
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'release', { lock: 'jl-0', session: SA, token: 5 }, 20, 'ok', {}, 30],
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0, max_hold_ms: 60_000, reused_key: K }, 40, 'ok', { token: 5 }, 50],
  ]);
  assert.equal(checkLinearizable(same).valid, false);
  const held = ops([['c1', 'acquire', { lock: 'jl-1', session: SA, wait_ms: 0, reused_key: K }, 40, 'fail', { code: 'lock_held' }, 50]]);
  assert.match(checkKeyReuse(held).violations[0]!, /answered lock_held, not 422/);
});

test('reused keys: a refusal after the session ended is no violation of the model, and a grant it made anyway is caught', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'close', { session: SA }, 20, 'ok', { released: ['jl-0'] }, 30],
    ['c1', 'acquire', { lock: 'jl-1', session: SA, wait_ms: 0, reused_key: K }, 40, 'fail', { code: 'idempotency_key_reused' }, 50],
  ]);
  assert.equal(checkLinearizable(h).valid, true);
  // refused, yet a read shows the session holding the other lock: "changed nothing" broken
  const applied = ops([
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0 }, 0, 'ok', { token: 5 }, 10],
    ['c1', 'acquire', { lock: 'jl-1', session: SA, wait_ms: 0, reused_key: K }, 40, 'fail', { code: 'idempotency_key_reused' }, 50],
    ['c2', 'read', { lock: 'jl-1' }, 60, 'ok', { held: true, holder: SA, holder_token: 6 }, 70],
  ]);
  assert.equal(checkLinearizable(applied).valid, false);
});
