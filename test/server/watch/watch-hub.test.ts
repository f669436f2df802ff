// The watch feed's parts without a server: the window evicts whole index groups and says
// exactly which resume points it can serve; a snapshot install ends every stream and
// moves the floor; a stream whose sink reports a full buffer is cut off; every FsmEvent
// maps to the contract's events (docs/api.md "Watch").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WatchRing } from '../../../src/server/watch/watch-ring.js';
import { WatchHub } from '../../../src/server/watch/watch-hub.js';
import { isWatched, watchEventsOf } from '../../../src/server/watch/watch-events.js';
import type { Result } from '../../../src/api/service-result.js';
import type { FsmEvent } from '../../../src/lock-fsm/index.js';

describe('WatchRing', () => {
  it('evicts whole index groups; covers(after) iff every event after it is kept', () => {
    const r = new WatchRing(4, 10);
    assert.ok(r.covers(10) && !r.covers(9), 'starts at its floor');
    r.push(11, ['a', 'b'], ['A11', 'B11']);
    r.push(12, ['a'], ['A12']);
    r.push(14, ['b', 'a'], ['B14', 'A14']); // 5 > 4: index 11's two events go together
    assert.equal(r.floor, 11);
    assert.equal(r.size, 3);
    assert.ok(!r.covers(10) && r.covers(11) && r.covers(13));
    assert.equal(r.replay(11, ''), 'A12B14A14');
    assert.equal(r.replay(12, 'a'), 'A14');
    assert.equal(r.replay(14, ''), '');
    r.push(15, ['x', 'x', 'x', 'x', 'x'], ['1', '2', '3', '4', '5']); // bigger than the window: kept whole
    assert.equal(r.floor, 14);
    assert.equal(r.replay(14, ''), '12345');
    r.reset(40);
    assert.equal(r.size, 0);
    assert.ok(!r.covers(39) && r.covers(40));
  });

  it('keeps unread items as they are and renders each once, on the first replay that reads it', () => {
    const rendered: number[] = [];
    const r = new WatchRing<{ v: string }>(10, 0, (item, index) => {
      rendered.push(index);
      return `${item.v}@${index};`;
    });
    r.push(1, ['a'], [{ v: 'x' }]);
    r.push(2, ['b', 'a'], ['B2;', { v: 'y' }]);
    assert.deepEqual(rendered, [], 'nothing rendered before a replay');
    assert.equal(r.replay(0, 'a'), 'x@1;y@2;');
    assert.equal(r.replay(0, ''), 'x@1;B2;y@2;');
    assert.deepEqual(rendered, [1, 2], 'each item once: the second replay used the kept frames');
  });
});

describe('WatchHub', () => {
  const sink = (room = true): { text: string; ended: string | null; write(c: string): boolean; end(r: string): void } => ({
    text: '', ended: null,
    write(c) { this.text += c; return room; },
    end(r) { this.ended = r; },
  });
  const granted = (name: string, token: number): FsmEvent => ({ type: 'granted', name, sessionId: 's', fencingToken: token });

  const refusalCode = (r: Result<unknown>): string | null => (r.ok ? null : r.failure.code);

  it('a snapshot install ends every stream and moves the floor; a full sink is cut off; limits', () => {
    const hub = new WatchHub({ retained: 100, maxStreams: 2, appliedIndex: 5, holders: () => [] });
    const a = sink();
    const b = sink(false);
    hub.open('', null, a);
    assert.match(a.text, /^id: 5\n\n$/);
    hub.open('', 5, b);
    assert.equal(refusalCode(hub.open('', null, sink())), 'too_many_requests');
    hub.onApplied(6, { result: { ok: true, kind: 'noop' }, events: [granted('k', 6)] });
    assert.ok(b.ended !== null, 'the sink with no room was cut off');
    assert.equal(hub.streamCount, 1);
    assert.match(a.text, /id: 6\nevent: acquired\ndata: \{"kind":"lock","name":"k","session_id":"s","fencing_token":6,"mode":"exclusive","index":6\}\n\n$/);
    hub.onSnapshotRestored(50);
    assert.ok(a.ended !== null, 'the open stream was ended');
    assert.equal(hub.streamCount as number, 0);
    assert.equal(hub.floor, 50);
    assert.equal(refusalCode(hub.open('', 49, sink())), 'compacted');
    hub.close();
    assert.equal(refusalCode(hub.open('', null, sink())), 'unavailable');
  });

  it('a node nobody watched resumes a stream with the frames a live stream got', () => {
    const watched = new WatchHub({ retained: 100, maxStreams: 10, appliedIndex: 5, holders: () => [] });
    const unwatched = new WatchHub({ retained: 100, maxStreams: 10, appliedIndex: 5, holders: () => [] });
    const live = sink();
    watched.open('', 5, live);
    const entries: [number, FsmEvent[]][] = [
      [6, [granted('a', 6), { type: 'sessionOpened', sessionId: 's2', ttlMs: 1 }]],
      [7, [{ type: 'released', name: 'a', sessionId: 's', fencingToken: 6, reason: 'released' }, granted('b', 7)]],
      [8, [{ type: 'lockDelayEnded', name: 'a' }]],
      [9, [{ type: 'semLimit', name: 'sem', limit: 3 }]],
    ];
    for (const [i, events] of entries) for (const hub of [watched, unwatched]) hub.onApplied(i, { result: { ok: true, kind: 'noop' }, events });
    const resumed = sink();
    unwatched.open('', 5, resumed);
    assert.match(live.text, /^: open\n\nid: 6\nevent: acquired\n/);
    assert.equal(resumed.text, live.text.slice(': open\n\n'.length), 'the same frames, formatted on the resume');
    const fromA = sink();
    unwatched.open('a', 6, fromA);
    assert.equal((fromA.text.match(/^event: /gm) ?? []).length, 1, 'the prefix filter holds for unformatted events too');
    watched.close();
    unwatched.close();
  });

  it('a resume after an index this node has not applied yet (restarted, replaying its log) sends nothing at or below it, once', () => {
    // found by jepsen-lite (kill-all, then a watch resumed on the restarting node): the
    // replayed entries 6…7 were sent again to a stream that had them
    const hub = new WatchHub({ retained: 100, maxStreams: 10, appliedIndex: 5, holders: () => [] });
    const resumed = sink();
    const fresh = sink();
    hub.open('', 7, resumed);
    hub.open('', null, fresh);
    for (const i of [6, 7, 8, 9]) hub.onApplied(i, { result: { ok: true, kind: 'noop' }, events: [granted(`k${i}`, i)] });
    const ids = (t: string): number[] => [...t.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    assert.deepEqual(ids(resumed.text), [8, 9], 'only what comes after the resume point');
    assert.deepEqual(ids(fresh.text), [5, 6, 7, 8, 9], 'a fresh stream: its opening at 5, then everything after');
    hub.close();
  });

  it('maps every FSM event: grants, ends with their reason, waits, limits; bookkeeping to nothing', () => {
    const m = (e: FsmEvent): string[] => watchEventsOf(e, 9).map((w) => `${w.event} ${w.data.kind} ${w.data.reason ?? '-'}`);
    assert.deepEqual(m({ type: 'released', name: 'n', sessionId: 's', fencingToken: 1, reason: 'released' }), ['released lock -']);
    assert.deepEqual(m({ type: 'released', name: 'n', sessionId: 's', fencingToken: 1, mode: 'shared', reason: 'closed' }), ['released lock session_closed']);
    assert.deepEqual(m({ type: 'semReleased', name: 'n', sessionId: 's', fencingToken: 1, permits: 2, reason: 'expired' }), ['expired semaphore session_expired']);
    assert.deepEqual(m({ type: 'semGranted', name: 'n', sessionId: 's', fencingToken: 1, permits: 2, limit: 3 }), ['acquired semaphore -']);
    assert.deepEqual(m({ type: 'waiting', name: 'n', sessionId: 's', mode: 'shared' }), ['waiting lock -']);
    assert.deepEqual(m({ type: 'semWaiting', name: 'n', sessionId: 's', permits: 1 }), ['waiting semaphore -']);
    assert.deepEqual(m({ type: 'semLimit', name: 'n', limit: 4 }), ['limit semaphore -']);
    for (const e of [
      { type: 'waitEnded', name: 'n', sessionId: 's', reason: 'cancelled' },
      { type: 'semWaitEnded', name: 'n', sessionId: 's', reason: 'session_ended' },
      { type: 'sessionOpened', sessionId: 's', ttlMs: 1 },
      { type: 'sessionEnded', sessionId: 's', reason: 'closed', released: [] },
      { type: 'lockDelayStarted', name: 'n', delayMs: 1, since: 1 },
      { type: 'lockDelayEnded', name: 'n' },
    ] as FsmEvent[]) {
      assert.deepEqual(m(e), [], e.type);
      assert.equal(isWatched(e), false, e.type);
    }
  });
});
