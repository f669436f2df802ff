// The shared-lock and semaphore checkers of the lock simulation fire on the states and
// streams they exist to reject (docs/simulation-lock.md "Shared locks and semaphores"):
// each case feeds a fabricated bad state or applied stream and asserts the named checker
// throws, beside a good one that passes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ModeShadow, checkLockModes, checkSemLimits } from './mode-checkers.js';
import type { ApplyOutput, ApplyResult, Command, FsmEvent } from '../../../src/lock-fsm/index.js';
import { fail, fires } from './fired.js';


test('checkSemLimits: permits over the limit of the latest grant fire; a shrink below earlier grants does not', () => {
  const limits = new Map([[1, 4], [2, 4], [3, 2]]);
  // limit 4: 2 + 2 held, then resized to 2: the holders keep their permits (no new grant)
  checkSemLimits([{ name: 's', limit: 2, holders: [{ sessionId: 'a', permits: 2, fencingToken: 1 }, { sessionId: 'b', permits: 2, fencingToken: 2 }] }], limits, fail, 'ok');
  // a grant under limit 2 beside 2 already held: 4 > 2
  fires('SemaphoreLimit', () => checkSemLimits([{ name: 's', limit: 2, holders: [{ sessionId: 'a', permits: 2, fencingToken: 1 }, { sessionId: 'c', permits: 2, fencingToken: 3 }] }], limits, fail, 'bad'));
  // 5 permits under limit 4
  fires('SemaphoreLimit', () => checkSemLimits([{ name: 's', limit: 4, holders: [{ sessionId: 'a', permits: 3, fencingToken: 1 }, { sessionId: 'b', permits: 2, fencingToken: 2 }] }], limits, fail, 'bad'));
  // a holder no grant of the stream names
  fires('SemaphoreLimit', () => checkSemLimits([{ name: 's', limit: 4, holders: [{ sessionId: 'a', permits: 1, fencingToken: 9 }] }], limits, fail, 'bad'));
});

test('checkLockModes: an exclusive holder beside a shared one fires', () => {
  checkLockModes([{ name: 'l', exclusive: null, shared: ['a', 'b'] }, { name: 'm', exclusive: 'c', shared: [] }], fail, 'ok');
  fires('SharedExclusion', () => checkLockModes([{ name: 'l', exclusive: 'c', shared: ['a'] }], fail, 'bad'));
});

const out = (result: ApplyResult, events: FsmEvent[] = []): ApplyOutput => ({ result, events });
const NOOP: ApplyResult = { ok: true, kind: 'noop' };
const acq = (name: string, sessionId: string, mode?: 'shared'): Command => ({ kind: 'acquire', name, sessionId, waitMs: 100, ...(mode ? { mode } : {}) });
const granted = (name: string, sessionId: string, fencingToken: number, shared = false): FsmEvent => ({ type: 'granted', name, sessionId, fencingToken, ...(shared ? { mode: 'shared' as const } : {}) });
const semGranted = (name: string, sessionId: string, fencingToken: number, permits: number, limit: number): FsmEvent => ({ type: 'semGranted', name, sessionId, fencingToken, permits, limit });

test('ModeShadow: shared holders coexist; an exclusive grant beside them, or a share beside an exclusive holder, fires', () => {
  const s = new ModeShadow(fail);
  s.onApplied(1, acq('l', 'a', 'shared'), out(NOOP, [granted('l', 'a', 1, true)]));
  s.onApplied(2, acq('l', 'b', 'shared'), out(NOOP, [granted('l', 'b', 2, true)]));
  assert.equal(s.counts.maxShared, 2);
  fires('SharedExclusion', () => s.onApplied(3, acq('l', 'c'), out(NOOP, [granted('l', 'c', 3)])));
  const t = new ModeShadow(fail);
  t.onApplied(1, acq('l', 'a'), out(NOOP, [granted('l', 'a', 1)]));
  fires('SharedExclusion', () => t.onApplied(2, acq('l', 'b', 'shared'), out(NOOP, [granted('l', 'b', 2, true)])));
  // released shares free the lock for an exclusive grant
  const u = new ModeShadow(fail);
  u.onApplied(1, acq('l', 'a', 'shared'), out(NOOP, [granted('l', 'a', 1, true)]));
  u.onApplied(2, { kind: 'release', name: 'l', sessionId: 'a' }, out({ ok: true, kind: 'released', name: 'l' }));
  u.onApplied(3, acq('l', 'c'), out(NOOP, [granted('l', 'c', 3)]));
});

test('ModeShadow: a semaphore grant over the limit it was granted under fires; releases and session ends give permits back', () => {
  const sem = (sessionId: string, permits: number, limit: number): Command => ({ kind: 'semAcquire', name: 's', sessionId, limit, permits, waitMs: 0 });
  const s = new ModeShadow(fail);
  s.onApplied(1, sem('a', 2, 3), out(NOOP, [semGranted('s', 'a', 1, 2, 3)]));
  fires('SemaphoreLimit', () => s.onApplied(2, sem('b', 2, 3), out(NOOP, [semGranted('s', 'b', 2, 2, 3)])));
  const t = new ModeShadow(fail);
  t.onApplied(1, sem('a', 2, 3), out(NOOP, [semGranted('s', 'a', 1, 2, 3)]));
  t.onApplied(2, { kind: 'semRelease', name: 's', sessionId: 'a' }, out({ ok: true, kind: 'sem_released', name: 's' }));
  t.onApplied(3, sem('b', 3, 3), out(NOOP, [semGranted('s', 'b', 3, 3, 3)]));
  t.onApplied(4, { kind: 'expireSession', sessionId: 'b' }, out(NOOP, [{ type: 'sessionEnded', sessionId: 'b', reason: 'expired', released: [] }]));
  t.onApplied(5, sem('c', 3, 3), out(NOOP, [semGranted('s', 'c', 5, 3, 3)]));
  assert.equal(t.grantLimit.get(5), 3);
});

test('ModeShadow: a grant ahead of an earlier waiter, or at once past the queue, fires (FIFO)', () => {
  const s = new ModeShadow(fail);
  s.onApplied(1, acq('l', 'a'), out(NOOP, [granted('l', 'a', 1)]));
  s.onApplied(2, acq('l', 'b', 'shared'), out({ ok: true, kind: 'queued', name: 'l', sessionId: 'b', position: 1 }));
  s.onApplied(3, acq('l', 'c', 'shared'), out({ ok: true, kind: 'queued', name: 'l', sessionId: 'c', position: 2 }));
  fires('Fifo', () => s.onApplied(4, { kind: 'release', name: 'l', sessionId: 'a' }, out({ ok: true, kind: 'released', name: 'l' }, [granted('l', 'c', 4, true)])));
  const t = new ModeShadow(fail);
  t.onApplied(1, acq('l', 'a'), out(NOOP, [granted('l', 'a', 1)]));
  t.onApplied(2, acq('l', 'b', 'shared'), out({ ok: true, kind: 'queued', name: 'l', sessionId: 'b', position: 1 }));
  t.onApplied(3, acq('l', 'c', 'shared'), out({ ok: true, kind: 'queued', name: 'l', sessionId: 'c', position: 2 }));
  // readers at the head granted together, in queue order
  t.onApplied(4, { kind: 'release', name: 'l', sessionId: 'a' }, out({ ok: true, kind: 'released', name: 'l' }, [granted('l', 'b', 4, true), granted('l', 'c', 5, true)]));
  // a semaphore grant at once while someone waits
  const u = new ModeShadow(fail);
  u.onApplied(1, undefined, out(NOOP, [semGranted('s', 'a', 1, 1, 1)]));
  u.onApplied(2, undefined, out({ ok: true, kind: 'noop' }));
  u.onApplied(3, { kind: 'semAcquire', name: 's', sessionId: 'b', limit: 1, permits: 1, waitMs: 100 }, out({ ok: true, kind: 'sem_queued', name: 's', sessionId: 'b', position: 1 }));
  fires('Fifo', () => u.onApplied(4, { kind: 'semRelease', name: 's', sessionId: 'a' }, out({ ok: true, kind: 'sem_released', name: 's' }, [semGranted('s', 'c', 4, 1, 1)])));
});
