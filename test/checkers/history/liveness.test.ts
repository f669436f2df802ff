// liveness.ts on small hand-written histories: it must accept a correct history and name
// the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkLiveness, recoveries } from './liveness.js';

const SA = 'a'.repeat(32);

test('liveness: recovery is the time from a heal to the next grant, against a bound', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'L', session: SA }, 900, 'ok', { token: 5 }, 1500],
    ['c1', 'acquire', { lock: 'L', session: SA }, 9000, 'ok', { token: 6 }, 9100],
  ]);
  const rs = recoveries(h, [{ variant: 'kill-leader', detail: '', start: 0, end: 1000 }, { variant: 'pause-leader', detail: '', start: 2000, end: 3000 }], 20_000);
  assert.deepEqual(rs.map((r) => r.recoveryMs), [500, 6100]);
  assert.equal(checkLiveness(rs, 5000).length, 1);
});
