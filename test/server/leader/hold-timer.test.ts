// raftlock_lock_hold_seconds from the FSM's events alone (src/server/leader/hold-timer.ts): each way
// a grant ends is observed once, under its `end`, with the time from its grant; a replayed
// entry (a node catching up on its log) observes nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HoldTimer } from '../../../src/server/leader/hold-timer.js';
import { Metrics } from '../../../src/metrics.js';
import type { ApplyOutput, FsmEvent } from '../../../src/lock-fsm/index.js';

const out = (events: FsmEvent[], replayed = false): ApplyOutput => ({ result: { ok: true, kind: 'noop' }, events, ...(replayed ? { replayed: true } : {}) }) as ApplyOutput;
const granted = (sessionId: string, token: number): FsmEvent => ({ type: 'granted', name: `l${token}`, sessionId, fencingToken: token });

async function counts(m: Metrics): Promise<Record<string, { count: number; sum: number }>> {
  const json = await m.registry.getMetricsAsJSON();
  const h = json.find((x) => x.name === 'raftlock_lock_hold_seconds') as unknown as { values: { metricName: string; labels: Record<string, string>; value: number }[] };
  const r: Record<string, { count: number; sum: number }> = {};
  for (const v of h.values) {
    const k = `${v.labels['kind']} ${v.labels['end']}`;
    r[k] ??= { count: 0, sum: 0 };
    if (v.metricName.endsWith('_count')) r[k].count = v.value;
    if (v.metricName.endsWith('_sum')) r[k].sum = v.value;
  }
  return r;
}

test('every end of a grant is observed once under its end, with its held time; replays are not', async () => {
  const m = new Metrics({ defaultMetrics: false });
  const t = new HoldTimer(m);
  t.onApplied(out([granted('a', 1), granted('a', 2), granted('b', 3), granted('c', 4), granted('d', 5), { type: 'semGranted', name: 's', sessionId: 'e', fencingToken: 6, permits: 2, limit: 3 }, granted('f', 7)]), 1000);
  t.onApplied(out([granted('z', 99)], true), 1000);
  assert.equal(t.size, 7, 'the replayed grant is not tracked');
  t.onApplied(out([{ type: 'released', name: 'l1', sessionId: 'a', fencingToken: 1, reason: 'released' }]), 2000);
  // an election's leader resigning: its grant ends, although no `released` event says so
  t.onApplied(out([{ type: 'resigned', name: 'l2', sessionId: 'a', fencingToken: 2 }]), 3000);
  t.onApplied(out([{ type: 'released', name: 'l3', sessionId: 'b', fencingToken: 3, reason: 'expired' }, { type: 'sessionEnded', sessionId: 'b', reason: 'expired', released: ['l3'] }]), 4000);
  t.onApplied(out([{ type: 'revoked', kind: 'lock', name: 'l4', sessionId: 'c', fencingToken: 4 }]), 5000);
  t.onApplied(out([{ type: 'grantExpired', kind: 'lock', name: 'l5', sessionId: 'd', fencingToken: 5, reason: 'max_hold' }]), 6000);
  t.onApplied(out([{ type: 'semReleased', name: 's', sessionId: 'e', fencingToken: 6, permits: 2, reason: 'closed' }]), 7000);
  // a session's end clears a grant no event named
  t.onApplied(out([{ type: 'sessionEnded', sessionId: 'f', reason: 'closed', released: [] }]), 8000);
  assert.equal(t.size, 0);
  const c = await counts(m);
  assert.deepEqual(c['lock released'], { count: 2, sum: 1 + 2 });
  assert.deepEqual(c['lock session_ended'], { count: 2, sum: 3 + 7 });
  assert.deepEqual(c['lock revoked'], { count: 1, sum: 4 });
  assert.deepEqual(c['lock max_hold'], { count: 1, sum: 5 });
  assert.deepEqual(c['semaphore session_ended'], { count: 1, sum: 6 });
  assert.equal(c['semaphore released'], undefined, 'nothing observed where nothing ended');
  // an end seen twice (the session end after its release) is counted once
  t.onApplied(out([{ type: 'released', name: 'l1', sessionId: 'a', fencingToken: 1, reason: 'released' }]), 9000);
  assert.equal((await counts(m))['lock released']?.count, 2);
});
