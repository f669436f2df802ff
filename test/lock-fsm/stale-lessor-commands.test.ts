// A lessor command whose proposal answered 'unknown' (its commit was slower than the
// proposal timeout) is proposed again while the first copy is still in the log. The copy
// that applies second must not end a LATER lock-delay or wait of the same lock/session:
// each endLockDelay / cancelWait names its item by the log index that began it
// (docs/lock-fsm.md "Lessor commands name what they end"). Entries and snapshots of
// versions before that keep the old rule: an epoch-less command ends the current item.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Lessor, LockFsm, exportState, type Command } from '../../src/lock-fsm/index.js';
import { Log, decode, encode } from './helpers.js';

/** h holds L with a lock-delay and expires; w queues behind: delay A is running */
function delayA(): { g: Log; endA: Command } {
  const g = new Log();
  g.open('h1', { lockDelayMs: 5000 });
  g.open('w', { lockDelayMs: 5000 });
  g.token('L', 'h1');
  g.acquire('L', 'w', 60_000);
  g.do({ kind: 'expireSession', sessionId: 'h1' });
  const [d] = g.fsm.locksInDelay();
  assert.ok(d && d.since === g.index, 'the delay is named by the index of the expiry');
  return { g, endA: { kind: 'endLockDelay', name: 'L', since: d.since } };
}

test('a stale endLockDelay copy does not end a later lock-delay of the same lock', () => {
  const { g, endA } = delayA();
  g.do(endA); // the first copy: delay A ends, w is granted L
  assert.equal(g.fsm.getLock('L').holder?.sessionId, 'w');
  g.do({ kind: 'expireSession', sessionId: 'w' }); // w expires: delay B starts
  assert.equal(g.fsm.getLock('L').inDelay, true);
  const out = g.run(endA); // the second copy of A's command lands now
  assert.deepEqual(out.events, [], 'delay B is untouched');
  assert.equal(g.fsm.getLock('L').inDelay, true, 'the lock-delay holds (README: lock-delay)');
  const [b] = g.fsm.locksInDelay();
  assert.deepEqual(g.run({ kind: 'endLockDelay', name: 'L', since: b!.since }).events, [{ type: 'lockDelayEnded', name: 'L' }], 'B ends when B is named');
});

test('a stale cancelWait copy does not end a later wait of the same session', () => {
  const g = new Log();
  g.open('h');
  g.open('w');
  g.token('L', 'h');
  g.acquire('L', 'w', 1000);
  const waitA = g.fsm.waitOf('L', 'w')!.since;
  const cancelA: Command = { kind: 'cancelWait', name: 'L', sessionId: 'w', since: waitA };
  assert.deepEqual(g.do(cancelA), { ok: true, kind: 'wait_cancelled', name: 'L', sessionId: 'w' }); // wait A times out
  g.acquire('L', 'w', 30_000); // the client asks again: wait B
  const waitB = g.fsm.waitOf('L', 'w')!.since;
  assert.ok(waitB > waitA);
  const out = g.run(cancelA); // the stale copy of A's cancel
  assert.deepEqual(out, { result: { ok: true, kind: 'noop' }, events: [] });
  assert.deepEqual(g.fsm.getSession('w')?.waiting, ['L'], 'wait B keeps its place');
  g.do({ kind: 'release', name: 'L', sessionId: 'h' });
  assert.equal(g.fsm.getLock('L').holder?.sessionId, 'w', 'and is granted');
  // a stale cancel after the grant still reports the grant (the race the API layer relies on)
  assert.equal(g.do(cancelA).ok && (g.do(cancelA) as { kind: string }).kind, 'acquired');
});

test('an epoch-less (legacy) endLockDelay or cancelWait ends the current item, as before', () => {
  const { g } = delayA();
  assert.deepEqual(g.run({ kind: 'endLockDelay', name: 'L' }).events.map((e) => e.type), ['lockDelayEnded', 'granted']);
  g.open('x');
  g.acquire('L', 'x', 5000);
  assert.deepEqual(g.do({ kind: 'cancelWait', name: 'L', sessionId: 'x' }), { ok: true, kind: 'wait_cancelled', name: 'L', sessionId: 'x' });
});

test('a snapshot written before delays and waits had an identity restores them as since 0, which any command ends', () => {
  const { g } = delayA();
  const s = exportState(g.fsm);
  // the old format: 6-element lock tuples, 3-element waiter tuples
  const { sems: _sems, elections: _elections, waitTimes: _waitTimes, ...v1 } = s;
  const old = { ...v1, v: 1, locks: s.locks.map((l) => [l[0], l[1], l[2], l[3], l[4], l[5].map((w) => [w[0], w[1], w[2]])]) };
  const fsm = LockFsm.fromSnapshot(encode(old), decode);
  assert.deepEqual(fsm.locksInDelay(), [{ name: 'L', delayMs: 5000, since: 0 }]);
  // and with no record of when the wait was queued, it counts as queued at the snapshot's log time
  assert.deepEqual([...fsm.waits()], [{ name: 'L', sessionId: 'w', waitMs: 60_000, since: 0, queuedAtMs: s.idem.nowMs }]);
  // a new leader's lessor proposes the legacy form for it, and it applies
  const lessor = new Lessor({ tickMs: 100 });
  lessor.promote(0, fsm);
  assert.deepEqual(lessor.due(5000), [{ kind: 'endLockDelay', name: 'L' }]);
  // a replica that replayed the log knows the delay's index: a command naming it ends both alike
  const since = g.fsm.locksInDelay()[0]!.since;
  const i = g.index + 1;
  assert.deepEqual(fsm.apply(i, { atMs: g.atMs, cmd: { kind: 'endLockDelay', name: 'L', since } }), g.run({ kind: 'endLockDelay', name: 'L', since }, { index: i }));
  assert.deepEqual(exportState(fsm).locks, exportState(g.fsm).locks);
});

/** the lessor proposes; each command applies once at once, and once more `lagMs` later
 *  (the copy re-proposed after 'unknown') */
function runWithDuplicates(legacy: boolean): { delayEndedAt: number[]; delayStartedAt: number[] } {
  const g = new Log();
  const lessor = new Lessor({ tickMs: 100, retryMs: 1000, ...(legacy ? { legacyCommands: ['endLockDelay'] as const } : {}) });
  lessor.promote(0, g.fsm);
  let now = 0;
  const late: { at: number; cmd: Command }[] = [];
  const delayEndedAt: number[] = [];
  const delayStartedAt: number[] = [];
  const apply = (cmd: Command): void => {
    const out = g.run(cmd, { atMs: now });
    lessor.observe(out.events, now);
    for (const e of out.events) {
      if (e.type === 'lockDelayStarted') delayStartedAt.push(now);
      if (e.type === 'lockDelayEnded') delayEndedAt.push(now);
    }
  };
  apply({ kind: 'openSession', sessionId: 'h', ttlMs: 1000, owner: '', lockDelayMs: 3000 });
  apply({ kind: 'openSession', sessionId: 'w', ttlMs: 1000, owner: '', lockDelayMs: 3000 });
  apply({ kind: 'acquire', name: 'L', sessionId: 'h', waitMs: 0 });
  apply({ kind: 'acquire', name: 'L', sessionId: 'w', waitMs: 60_000 });
  lessor.renew('w', 3500); // w keeps alive while it waits, then stops
  for (; now < 20_000; now += 100) {
    for (const cmd of lessor.due(now)) {
      apply(cmd);
      if (cmd.kind === 'endLockDelay') late.push({ at: now + 2500, cmd });
    }
    for (const d of late.filter((x) => x.at === now)) apply(d.cmd);
  }
  return { delayEndedAt, delayStartedAt };
}

test('with the lessor: a delayed duplicate of endLockDelay cannot shorten the next lock-delay (and does without since)', () => {
  const ok = runWithDuplicates(false);
  assert.equal(ok.delayStartedAt.length, 2, 'h expired, then w (granted at the end of the first delay) expired');
  ok.delayEndedAt.forEach((at, i) => assert.ok(at >= ok.delayStartedAt[i]! + 3000, `delay ${i} ran its 3000 ms: ${JSON.stringify(ok)}`));
  // the mutation: the same schedule with epoch-less commands ends the second delay early
  const bad = runWithDuplicates(true);
  assert.ok(bad.delayEndedAt.some((at, i) => at < bad.delayStartedAt[i]! + 3000), `the stale copy ended a delay early: ${JSON.stringify(bad)}`);
});
