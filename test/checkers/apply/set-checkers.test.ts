// SetAtomic and DeadlockReal (set-checkers.ts) on synthetic inputs: each fires on a broken
// case and stays quiet on the correct one, and the shadow reports them under their names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockFsm, type ApplyOutput, type Command, type CycleEntry } from '../../../src/lock-fsm/index.js';
import { SetShadow, checkDeadlockCycle, checkSetsAtomic, edgesOf, findCycle, type GraphView } from './set-checkers.js';
import { fail, fires } from './fired.js';

const out = (o: Partial<ApplyOutput>): ApplyOutput => ({ result: { ok: true, kind: 'noop' }, events: [], ...o });

test('SetAtomic: a waiting set granted whole passes; partly, without its setGranted, or not held after, it fails', () => {
  const before = [{ sid: 's1', since: 5, places: ['a', 'b'] }];
  const held = new Set(['a/s1/10', 'b/s1/11']);
  const holds = (n: string, sid: string, t: number): boolean => held.has(`${n}/${sid}/${t}`);
  const whole = out({ events: [
    { type: 'granted', name: 'a', sessionId: 's1', fencingToken: 10 },
    { type: 'granted', name: 'b', sessionId: 's1', fencingToken: 11 },
    { type: 'setGranted', sessionId: 's1', since: 5, grants: [{ name: 'a', fencingToken: 10 }, { name: 'b', fencingToken: 11 }] },
  ] });
  assert.equal(checkSetsAtomic(before, whole, holds), null);
  assert.equal(checkSetsAtomic(before, out({}), holds), null, 'nothing granted: fine');
  const partly = out({ events: [{ type: 'granted', name: 'a', sessionId: 's1', fencingToken: 10 }] });
  assert.match(checkSetsAtomic(before, partly, holds) ?? '', /partly granted/);
  const silent = out({ events: whole.events.slice(0, 2) });
  assert.match(checkSetsAtomic(before, silent, holds) ?? '', /without its setGranted/);
  const lost = (n: string, sid: string, t: number): boolean => n === 'a' && holds(n, sid, t);
  assert.match(checkSetsAtomic(before, whole, lost) ?? '', /partly held after the apply: b\/11/);
  const answered = out({ result: { ok: true, kind: 'acquired_all', sessionId: 's2', ttlMs: 1000, grants: [{ name: 'c', fencingToken: 3 }, { name: 'd', fencingToken: 4 }] } });
  assert.match(checkSetsAtomic([], answered, (n) => n === 'c') ?? '', /acquired_all of s2 is partly held/);
  assert.equal(checkSetsAtomic([], answered, () => true), null);
  assert.equal(checkSetsAtomic([], { ...answered, replayed: true }, () => false), null, 'a replayed answer is about an earlier state');
});

// s1 holds a, waits for b; s2 holds b; s2's new wait on a closes s2 → s1 → s2
const view: GraphView = {
  locks: [
    { name: 'a', holders: [{ sid: 's1', mode: 'exclusive' }], waiters: [] },
    { name: 'b', holders: [{ sid: 's2', mode: 'exclusive' }], waiters: [{ sid: 's1', mode: 'exclusive' }] },
    { name: 'c', holders: [{ sid: 's3', mode: 'shared' }], waiters: [{ sid: 's4', mode: 'shared' }] },
  ],
  sems: [{ name: 'p', holders: ['s3'], waiters: ['s1'] }],
};

test('DeadlockReal: a real cycle passes; a made-up edge, a wrong first step or a wrong start fails', () => {
  const edges = edgesOf(view);
  const req = { kind: 'lock' as const, names: ['a'], mode: 'exclusive' as const };
  const real: CycleEntry[] = [{ sessionId: 's2', name: 'a' }, { sessionId: 's1', name: 'b' }];
  assert.equal(checkDeadlockCycle(view, edges, 's2', req, real), null);
  assert.match(checkDeadlockCycle(view, edges, 's1', req, real) ?? '', /not the refused request's session/);
  assert.match(checkDeadlockCycle(view, edges, 's2', req, [{ sessionId: 's2', name: 'a' }, { sessionId: 's1', name: 'c' }]) ?? '', /step 1: s1 does not wait on lock c for s2/);
  assert.match(checkDeadlockCycle(view, edges, 's2', { ...req, names: ['c'] }, real) ?? '', /not a requested lock/);
  assert.match(checkDeadlockCycle(view, edges, 's3', { kind: 'lock', names: ['a'], mode: 'exclusive' }, [{ sessionId: 's3', name: 'a' }, { sessionId: 's2', name: 'b' }]) ?? '', /would not wait for s2/);
  assert.match(checkDeadlockCycle(view, edges, 's2', req, [{ sessionId: 's2', name: 'a' }]) ?? '', /never waits for itself/);
  // shared with shared is no edge: s4 does not wait for s3
  assert.equal(edges.has('s4\u0000lock\u0000c\u0000s3'), false);
  assert.equal(edges.has('s1\u0000semaphore\u0000p\u0000s3'), true);
});

test('findCycle: none in an acyclic graph, one once an edge closes it', () => {
  assert.equal(findCycle(edgesOf(view)), null);
  const closed: GraphView = { ...view, locks: [...view.locks.slice(0, 2).map((l) => (l.name === 'a' ? { ...l, waiters: [{ sid: 's2', mode: 'exclusive' as const }] } : l))], sems: [] };
  assert.deepEqual(new Set(findCycle(edgesOf(closed))), new Set(['s1', 's2']));
});

function apply(fsm: LockFsm, index: number, cmd: Command): ApplyOutput {
  return fsm.apply(index, { atMs: 1000 * index, cmd });
}

test('SetShadow on a real FSM: quiet with deadlock detection on; DeadlockReal fires with it off (the mutation)', () => {
  for (const off of [false, true]) {
    const fsm = new LockFsm(off ? { testNoDeadlockDetection: true } : {});
    const sh = new SetShadow(fail);
    sh.onRestored('n1', fsm);
    const cmds: Command[] = [
      { kind: 'openSession', sessionId: 's1', ttlMs: 10_000, owner: '', lockDelayMs: 0 },
      { kind: 'openSession', sessionId: 's2', ttlMs: 10_000, owner: '', lockDelayMs: 0 },
      { kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 0 },
      { kind: 'acquire', name: 'b', sessionId: 's2', waitMs: 0 },
      { kind: 'acquireAll', names: ['b', 'c'], sessionId: 's1', waitMs: 1000 },
      { kind: 'acquire', name: 'a', sessionId: 's2', waitMs: 1000 },
    ];
    const run = (): void => cmds.forEach((cmd, i) => sh.onApplied('n1', i + 1, apply(fsm, i + 1, cmd), () => cmd, fsm, true));
    if (off) fires('DeadlockReal', run);
    else {
      run();
      assert.equal(sh.counts.deadlocks, 1);
      assert.equal(sh.counts.setsQueued, 1);
    }
  }
});

test('SetShadow: a deadlock answer naming a cycle the state does not have fires DeadlockReal', () => {
  const fsm = new LockFsm();
  const sh = new SetShadow(fail);
  sh.onRestored('n1', fsm);
  const open = (sid: string, i: number): void => { sh.onApplied('n1', i, apply(fsm, i, { kind: 'openSession', sessionId: sid, ttlMs: 10_000, owner: '', lockDelayMs: 0 }), () => undefined, fsm, true); };
  open('s1', 1);
  open('s2', 2);
  const cmd: Command = { kind: 'acquire', name: 'a', sessionId: 's1', waitMs: 1000 };
  const forged = out({ result: { ok: false, code: 'deadlock', cycle: [{ sessionId: 's1', name: 'a' }, { sessionId: 's2', name: 'b' }] } });
  fires('DeadlockReal', () => sh.onApplied('n1', 3, forged, () => cmd, fsm, true));
});
