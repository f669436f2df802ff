// followers-behind.ts on small hand-written histories: it must accept a correct history and name
// the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkFollowersBehind } from './followers-behind.js';

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
