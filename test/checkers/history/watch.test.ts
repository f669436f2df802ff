// The watch checker on hand-written stream records: streams that agree, resume across a
// cut inside one command's events and reopen after a justified 410 pass; a gap, a
// duplicate, events out of log order, a node that delivers other events at an index, a
// resume that re-sends differently, a 410 that was not needed, a stream left behind at
// the end and an acknowledged operation with no event are each caught.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ops } from './history-rows.js';
import { checkWatch } from './watch.js';
import type { WatchEv, WatchRecord } from './watch-records.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);

const acq = (i: number, name: string, s: string, token: number): WatchEv => ({ event: 'acquired', data: { kind: 'lock', name, session_id: s, fencing_token: token, mode: 'exclusive', index: i } });
const rel = (i: number, name: string, s: string, token: number): WatchEv => ({ event: 'released', data: { kind: 'lock', name, session_id: s, fencing_token: token, mode: 'exclusive', index: i } });

/** the log every node applies: A takes jl-0 at 3, releases at 5 and B gets it at 5, B releases at 8 */
const LOG: WatchEv[] = [acq(3, 'jl-0', SA, 10), rel(5, 'jl-0', SA, 10), acq(5, 'jl-0', SB, 11), rel(8, 'jl-0', SB, 11)];

/** one node that opened at index 1 and saw `evs` on one connection */
function plain(node: string, evs: WatchEv[], marker = 1): WatchRecord[] {
  return [
    { w: 'conn', node, conn: 1, from: null, t: 0 },
    { w: 'state', node, conn: 1, evs: [], marker, t: 1 },
    { w: 'evs', node, conn: 1, evs, t: 2 },
  ];
}

const HISTORY = ops([
  ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0 }, 10, 'ok', { token: 10 }, 20],
  ['c2', 'acquire', { lock: 'jl-0', session: SB, wait_ms: 1000 }, 25, 'ok', { token: 11 }, 60],
  ['c1', 'release', { lock: 'jl-0', session: SA, token: 10 }, 50, 'ok', {}, 55],
  ['c2', 'release', { lock: 'jl-0', session: SB, token: 11 }, 70, 'ok', {}, 80],
]);

test('watch: three nodes with the same stream, one resuming inside a command and one reopening after a 410, pass', () => {
  const n2: WatchRecord[] = [
    { w: 'conn', node: 'n2', conn: 1, from: null, t: 0 },
    { w: 'state', node: 'n2', conn: 1, evs: [], marker: 1, t: 1 },
    { w: 'evs', node: 'n2', conn: 1, evs: [LOG[0]!, LOG[1]!], t: 2 }, // the cut falls inside index 5
    { w: 'end', node: 'n2', conn: 1, reason: 'closed', t: 3 },
    { w: 'conn', node: 'n2', conn: 2, from: 4, t: 4 }, // after the index before: 5 again
    { w: 'evs', node: 'n2', conn: 2, evs: [LOG[1]!, LOG[2]!, LOG[3]!], t: 5 },
  ];
  const n3: WatchRecord[] = [
    { w: 'conn', node: 'n3', conn: 1, from: null, t: 0 },
    { w: 'state', node: 'n3', conn: 1, evs: [], marker: 1, t: 1 },
    { w: 'evs', node: 'n3', conn: 1, evs: [LOG[0]!], t: 2 },
    { w: 'end', node: 'n3', conn: 1, reason: 'ended by the server', t: 3 },
    { w: 'conn', node: 'n3', conn: 2, from: 2, t: 4 },
    { w: 'refused', node: 'n3', conn: 2, status: 410, code: 'compacted', compacted_index: 6, t: 5 },
    { w: 'conn', node: 'n3', conn: 3, from: null, t: 6 },
    { w: 'state', node: 'n3', conn: 3, evs: [acq(6, 'jl-0', SB, 11)], marker: 6, t: 7 },
    { w: 'evs', node: 'n3', conn: 3, evs: [LOG[3]!], t: 8 },
  ];
  const r = checkWatch([...plain('n1', LOG), ...n2, ...n3], HISTORY);
  assert.deepEqual(r.violations, []);
  assert.equal(r.events, 4);
  assert.equal(r.indices, 3);
  assert.equal(r.matched, 4);
  assert.equal(r.nodes.n3!.compacted, 1);
  assert.equal(r.nodes.n2!.connections, 2);
});

test('watch: a node that skips an index another delivered is caught (a gap)', () => {
  const r = checkWatch([...plain('n1', LOG), ...plain('n2', [LOG[0]!, LOG[3]!])], HISTORY);
  assert.ok(r.violations.some((v) => /n2's stream skipped index 5/.test(v)), r.violations.join('\n'));
});

test('watch: a duplicate and an event out of log order are caught', () => {
  const dup = checkWatch([...plain('n1', LOG), ...plain('n2', [...LOG, LOG[1]!])], HISTORY);
  assert.ok(dup.violations.some((v) => /released of index 5 came after index 8.*out of log order or a duplicate/.test(v)), dup.violations.join('\n'));
  const swapped = checkWatch([...plain('n1', LOG), ...plain('n2', [LOG[1]!, LOG[2]!, LOG[0]!, LOG[3]!])], HISTORY);
  assert.ok(swapped.violations.some((v) => /acquired of index 3 came after index 5/.test(v)), swapped.violations.join('\n'));
});

test('watch: two nodes delivering different events at one index are caught', () => {
  const other = [LOG[0]!, LOG[1]!, acq(5, 'jl-0', SB, 12), LOG[3]!];
  const r = checkWatch([...plain('n1', LOG), ...plain('n2', other)], HISTORY);
  assert.ok(r.violations.some((v) => /index 5: .* delivered .* but .* delivered/.test(v)), r.violations.join('\n'));
});

test('watch: a resume that re-sends an index differently, or sends at or below its from_index, is caught', () => {
  const base: WatchRecord[] = [
    { w: 'conn', node: 'n2', conn: 1, from: null, t: 0 },
    { w: 'state', node: 'n2', conn: 1, evs: [], marker: 1, t: 1 },
    { w: 'evs', node: 'n2', conn: 1, evs: [LOG[0]!, LOG[1]!], t: 2 },
    { w: 'conn', node: 'n2', conn: 2, from: 4, t: 4 },
  ];
  const differently = checkWatch([...plain('n1', LOG), ...base, { w: 'evs', node: 'n2', conn: 2, evs: [LOG[2]!, LOG[1]!, LOG[3]!], t: 5 }], HISTORY);
  assert.ok(differently.violations.some((v) => /re-sent index 5 differently/.test(v)), differently.violations.join('\n'));
  const below = checkWatch([...plain('n1', LOG), ...base, { w: 'evs', node: 'n2', conn: 2, evs: [LOG[0]!, LOG[1]!, LOG[2]!, LOG[3]!], t: 5 }], HISTORY);
  assert.ok(below.violations.some((v) => /resumed after index 4 but sent acquired of index 3/.test(v)), below.violations.join('\n'));
});

test('watch: a 410 for a resume point the node says it keeps is caught', () => {
  const n2: WatchRecord[] = [
    { w: 'conn', node: 'n2', conn: 1, from: null, t: 0 },
    { w: 'state', node: 'n2', conn: 1, evs: [], marker: 1, t: 1 },
    { w: 'evs', node: 'n2', conn: 1, evs: [LOG[0]!], t: 2 },
    { w: 'conn', node: 'n2', conn: 2, from: 2, t: 4 },
    { w: 'refused', node: 'n2', conn: 2, status: 410, code: 'compacted', compacted_index: 2, t: 5 },
    { w: 'conn', node: 'n2', conn: 3, from: null, t: 6 },
    { w: 'state', node: 'n2', conn: 3, evs: [], marker: 8, t: 7 },
  ];
  const r = checkWatch([...plain('n1', LOG), ...n2], HISTORY);
  assert.ok(r.violations.some((v) => /410 compacted for a resume after 2, but compacted_index 2/.test(v)), r.violations.join('\n'));
});

test('watch: a stream left behind at the end is caught; one opened afresh after the last event is not', () => {
  const r = checkWatch([...plain('n1', LOG), ...plain('n2', LOG.slice(0, 3))], HISTORY);
  assert.ok(r.violations.some((v) => /n2's stream ended at index 5; another node's reached 8/.test(v)), r.violations.join('\n'));
  const reopened: WatchRecord[] = [
    ...plain('n2', LOG),
    { w: 'conn', node: 'n2', conn: 2, from: 7, t: 9 },
    { w: 'refused', node: 'n2', conn: 2, status: 410, compacted_index: 9, t: 10 },
    { w: 'conn', node: 'n2', conn: 3, from: null, t: 11 },
    { w: 'state', node: 'n2', conn: 3, evs: [], marker: 12, t: 12 },
  ];
  assert.deepEqual(checkWatch([...plain('n1', LOG), ...reopened], HISTORY).violations, []);
});

test('watch: an acknowledged grant or release with no event in any stream is caught', () => {
  const h = ops([
    ['c1', 'acquire', { lock: 'jl-0', session: SA, wait_ms: 0 }, 10, 'ok', { token: 10 }, 20],
    ['c1', 'release', { lock: 'jl-0', session: SA, token: 10 }, 50, 'ok', {}, 55],
    ['c3', 'sem-acquire', { lock: 'jm-0', session: SB, permits: 1, limit: 2 }, 60, 'ok', { token: 13 }, 70],
  ]);
  const r = checkWatch([...plain('n1', LOG.slice(0, 2)), ...plain('n2', LOG.slice(0, 2))], h);
  assert.equal(r.matched, 2);
  assert.equal(r.violations.length, 1, r.violations.join('\n'));
  assert.match(r.violations[0]!, /no stream has the acquired event of an acknowledged sem-acquire \(name jm-0, session bbbbbbbb, token 13\)/);
  // a range no stream covered: the history check is skipped, and says so
  const holes: WatchRecord[] = [
    ...plain('n1', LOG.slice(0, 1)),
    { w: 'conn', node: 'n1', conn: 2, from: 3, t: 4 },
    { w: 'refused', node: 'n1', conn: 2, status: 410, compacted_index: 7, t: 5 },
    { w: 'conn', node: 'n1', conn: 3, from: null, t: 6 },
    { w: 'state', node: 'n1', conn: 3, evs: [], marker: 7, t: 7 },
    { w: 'evs', node: 'n1', conn: 3, evs: [LOG[3]!], t: 8 },
  ];
  const s = checkWatch(holes, h);
  assert.deepEqual(s.violations, []);
  assert.match(s.historySkipped ?? '', /indices 4–7 were covered by no stream/);
});
