// durability.ts on small hand-written histories: it must accept a correct history and name
// the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkDurability } from './durability.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);

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
