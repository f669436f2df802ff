// The election checker of the lock simulation fires on the streams and states it exists
// to reject (docs/simulation-lock.md "Elections"): a fabricated bad applied stream or node
// state makes the named checker throw, beside a good one that passes. The node-state
// cases use a real LockFsm whose leader value is then corrupted by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ElectionShadow } from './election-checker.js';
import { LockFsm, exportState, type ApplyOutput, type ApplyResult, type Command, type FsmEvent } from '../../../src/lock-fsm/index.js';
import { fail, fires } from './fired.js';

const out = (result: ApplyResult, events: FsmEvent[] = []): ApplyOutput => ({ result, events });
const NOOP: ApplyResult = { ok: true, kind: 'noop' };
const won = (name: string, sessionId: string, fencingToken: number, value: string): FsmEvent => ({ type: 'granted', name, sessionId, fencingToken, value });

test('a second leader while one stands fires OneLeader; after a resign, release or session end it does not', () => {
  const ok = new ElectionShadow(fail);
  ok.onApplied(1, undefined, out(NOOP, [won('e', 'a', 1, 'va')]));
  ok.onApplied(2, undefined, out(NOOP, [{ type: 'resigned', name: 'e', sessionId: 'a', fencingToken: 1 }, won('e', 'b', 2, 'vb')]));
  const rel: Command = { kind: 'release', name: 'e', sessionId: 'b' };
  ok.onApplied(3, rel, out({ ok: true, kind: 'released', name: 'e' }, [won('e', 'c', 3, 'vc')]));
  ok.onApplied(4, undefined, out(NOOP, [{ type: 'sessionEnded', sessionId: 'c', reason: 'expired', released: ['e'] }]));
  ok.onApplied(5, undefined, out(NOOP, [won('e', 'd', 5, 'vd')]));
  assert.equal(ok.counts.electionsWon, 4);
  const bad = new ElectionShadow(fail);
  bad.onApplied(1, undefined, out(NOOP, [won('e', 'a', 1, 'va')]));
  fires('OneLeader', () => bad.onApplied(2, undefined, out(NOOP, [won('e', 'b', 2, 'vb')])));
  const plain = new ElectionShadow(fail);
  plain.onApplied(1, undefined, out(NOOP, [won('e', 'a', 1, 'va')]));
  fires('OneLeader', () => plain.onApplied(2, undefined, out(NOOP, [{ type: 'granted', name: 'e', sessionId: 'b', fencingToken: 2 }])));
});

test('a proclaim or resign by anyone but the standing leader fires OneLeader', () => {
  const s = new ElectionShadow(fail);
  s.onApplied(1, undefined, out(NOOP, [won('e', 'a', 1, 'va')]));
  fires('OneLeader', () => s.onApplied(2, undefined, out(NOOP, [{ type: 'proclaimed', name: 'e', sessionId: 'b', fencingToken: 1, value: 'x' }])));
  fires('OneLeader', () => s.onApplied(3, undefined, out(NOOP, [{ type: 'resigned', name: 'f', sessionId: 'a', fencingToken: 1 }])));
});

test("a node whose leader value is not the stream's last for that token fires LeaderValue; one that never won fires OneLeader", () => {
  const fsm = new LockFsm();
  const s = new ElectionShadow(fail);
  const apply = (index: number, cmd: Command): void => s.onApplied(index, cmd, fsm.apply(index, { atMs: 1, cmd }));
  apply(1, { kind: 'openSession', sessionId: 'a', ttlMs: 10_000, owner: '', lockDelayMs: 0 });
  apply(2, { kind: 'campaign', name: 'e', sessionId: 'a', value: 'v0', waitMs: 0 });
  apply(3, { kind: 'proclaim', name: 'e', sessionId: 'a', value: 'v1' });
  s.checkNode(fsm, 3, 'n1');
  // a lagging replica at index 2 with v0 is right; with v1 it is not
  const lag = LockFsm.fromState({ ...exportState(fsm), elections: [['e', 'v0', []]] });
  s.checkNode(lag, 2, 'n2');
  fires('LeaderValue', () => s.checkNode(fsm, 2, 'n2'));
  fsm.core.locks.get('e')!.value = 'forged';
  fires('LeaderValue', () => s.checkNode(fsm, 3, 'n1'));
  fsm.core.locks.get('e')!.token = 99;
  fires('OneLeader', () => s.checkNode(fsm, 3, 'n1'));
});

