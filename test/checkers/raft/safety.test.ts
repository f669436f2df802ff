// Checker self-tests: each checker must fire on a deliberately broken history, and stay
// quiet on a sound one. A checker that never fires proves nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStorage } from '../../../src/raft/core/storage.js';
import type { Entry, HardState, Message } from '../../../src/raft/core/types.js';
import { chainDigest } from './chain-digest.js';
import { Checkers, SafetyViolation, type CheckerName, type DurableView, type NodeSnapshot } from './safety.js';

const e = (index: number, term: number, byte = 0): Entry => ({ index, term, kind: 'normal', data: new Uint8Array([byte]) });

/** a node's log (entries at terms `terms[0]` at index 1, …) and hard state, durable as given */
function log(terms: number[], hs: HardState = { term: Math.max(0, ...terms), vote: null, commit: 0 }): DurableView & MemoryStorage {
  const s = new MemoryStorage({ voters: ['n1', 'n2', 'n3'], learners: [] });
  s.append(terms.map((t, k) => e(k + 1, t)));
  s.setHardState(hs);
  return s;
}

function node(id: string, role: string, term: number, l: DurableView, incarnation = 1): NodeSnapshot {
  return { id, incarnation, role, term, log: l, durable: l };
}

function fires(name: CheckerName, f: () => void): void {
  assert.throws(f, (err: unknown) => err instanceof SafetyViolation && err.checker === name, `${name} should fire`);
}

/** apply entries 1..n (terms given) on `id`, keeping the canonical digest chain */
function applyAll(c: Checkers, id: string, terms: number[]): void {
  let d = 0;
  terms.forEach((t, k) => {
    const ent = e(k + 1, t);
    d = chainDigest(d, ent);
    c.onApply(id, ent, d);
  });
}

test('a sound history passes every checker', () => {
  const c = new Checkers();
  c.onTrace({ type: 'becomeLeader', id: 'n1', term: 1 }, 1);
  const l1 = log([1, 1, 1], { term: 1, vote: 'n1', commit: 3 });
  c.onPersist('n1', l1.entries(1, 4), l1);
  c.onSend({ type: 'append', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: l1.entries(1, 4), commit: 0 }, l1, l1);
  const l2 = log([1, 1, 1], { term: 1, vote: 'n1', commit: 0 });
  c.onPersist('n2', l2.entries(1, 4), l2);
  c.onSend({ type: 'appendResp', from: 'n2', to: 'n1', term: 1, index: 3, reject: false, hint: 0, hintTerm: 0 }, l2, l2);
  applyAll(c, 'n1', [1, 1, 1]);
  applyAll(c, 'n2', [1, 1, 1]);
  c.onReadIssued(7, 'n1', 1, 10);
  c.onReadServed(7, 'n1', 3, c.canonicalDigest(3)!);
  c.afterTick([node('n1', 'leader', 1, l1), node('n2', 'follower', 1, l2)]);
  l1.append([e(4, 1)]);
  c.afterTick([node('n1', 'leader', 1, l1), node('n2', 'follower', 1, l2)]);
  assert.equal(c.maxApplied, 3);
});

test('ElectionSafety fires on two leaders in one term, and on a leader without a trace event', () => {
  const c = new Checkers();
  c.onTrace({ type: 'becomeLeader', id: 'n1', term: 4 }, 1);
  fires('ElectionSafety', () => c.onTrace({ type: 'becomeLeader', id: 'n2', term: 4 }, 1));
  fires('ElectionSafety', () => new Checkers().afterTick([node('n3', 'leader', 2, log([1]))]));
});

test('LogMatching fires when one (index, term) names two entries or two predecessors', () => {
  const c = new Checkers();
  const a = log([1, 2]);
  c.onPersist('n1', a.entries(1, 3), a);
  const b = new MemoryStorage();
  b.append([e(1, 1), { ...e(2, 2), data: new Uint8Array([9]) }]);
  fires('LogMatching', () => c.onPersist('n2', b.entries(1, 3), b));
  // same content, but a different previous term: the logs disagree before index 2
  fires('LogMatching', () => c.onSend({ type: 'append', from: 'n3', to: 'n1', term: 2, prevIndex: 1, prevTerm: 3, entries: [e(2, 2)], commit: 0 }, log([3], { term: 3, vote: null, commit: 0 }), log([3])));
});

test('LeaderAppendOnly fires when a leader loses or rewrites an entry', () => {
  const c = new Checkers();
  c.onTrace({ type: 'becomeLeader', id: 'n1', term: 2 }, 1);
  c.afterTick([node('n1', 'leader', 2, log([1, 2, 2]))]);
  fires('LeaderAppendOnly', () => c.afterTick([node('n1', 'leader', 2, log([1, 2]))]));
  const d = new Checkers();
  d.onTrace({ type: 'becomeLeader', id: 'n1', term: 3 }, 1);
  d.afterTick([node('n1', 'leader', 3, log([1, 3]))]);
  fires('LeaderAppendOnly', () => d.afterTick([node('n1', 'leader', 3, log([1, 2, 3]))]));
});

test('LeaderCompleteness fires when a new leader lacks an entry applied before its election', () => {
  const c = new Checkers();
  applyAll(c, 'n1', [1, 1, 1]);
  c.onTrace({ type: 'becomeLeader', id: 'n2', term: 2 }, 1);
  fires('LeaderCompleteness', () => c.afterTick([node('n2', 'leader', 2, log([1, 1]))]));
  const d = new Checkers();
  applyAll(d, 'n1', [1, 1]);
  d.onTrace({ type: 'becomeLeader', id: 'n2', term: 3 }, 1);
  fires('LeaderCompleteness', () => d.afterTick([node('n2', 'leader', 3, log([1, 2, 3]))]));
});

test('StateMachineSafety fires on divergent applies, gaps and wrong snapshots', () => {
  const c = new Checkers();
  applyAll(c, 'n1', [1, 1]);
  fires('StateMachineSafety', () => c.onApply('n2', e(1, 1), 12345));
  fires('StateMachineSafety', () => c.onApply('n2', e(4, 1), 1));
  fires('StateMachineSafety', () => c.onRestore('n3', 2, 999));
  fires('StateMachineSafety', () => c.onRestore('n3', 5, 999));
});

test('ReadLinearizability fires on a stale read and on a read nobody issued', () => {
  const c = new Checkers();
  applyAll(c, 'n1', [1, 1, 1]);
  c.onReadIssued(1, 'n2', 1, 5);
  fires('ReadLinearizability', () => c.onReadServed(1, 'n2', 2, c.canonicalDigest(2)!));
  fires('ReadLinearizability', () => c.onReadServed(42, 'n2', 3, c.canonicalDigest(3)!));
});

test('DurableBeforeSend fires on votes, acks and terms that are not yet durable', () => {
  const c = new Checkers();
  const vote: Message = { type: 'voteResp', from: 'n2', to: 'n1', term: 3, reject: false };
  fires('DurableBeforeSend', () => c.onSend(vote, log([1], { term: 3, vote: null, commit: 0 }), log([1])));
  fires('DurableBeforeSend', () => c.onSend({ type: 'heartbeatResp', from: 'n2', to: 'n1', term: 5, ctx: 0 }, log([1], { term: 4, vote: null, commit: 0 }), log([1])));
  const written = log([1, 1, 1]);
  const durable = log([1], { term: 1, vote: null, commit: 0 });
  fires('DurableBeforeSend', () => c.onSend({ type: 'appendResp', from: 'n2', to: 'n1', term: 1, index: 3, reject: false, hint: 0, hintTerm: 0 }, durable, written));
  // durable, or superseded by a durable newer term: fine
  c.onSend(vote, log([1], { term: 3, vote: 'n1', commit: 0 }), log([1]));
  c.onSend({ type: 'voteResp', from: 'n3', to: 'n1', term: 3, reject: false }, log([1], { term: 4, vote: 'n2', commit: 0 }), log([1]));
});

test('VoteOncePerTerm fires when a node grants one term to two candidates', () => {
  const c = new Checkers();
  c.onSend({ type: 'voteResp', from: 'n2', to: 'n1', term: 3, reject: false }, log([1], { term: 3, vote: 'n1', commit: 0 }), log([1]));
  fires('VoteOncePerTerm', () => c.onSend({ type: 'voteResp', from: 'n2', to: 'n3', term: 3, reject: false }, log([1], { term: 3, vote: 'n3', commit: 0 }), log([1])));
});

test('DurableTermMonotonic fires when a durable term goes back', () => {
  const c = new Checkers();
  c.afterTick([node('n1', 'follower', 5, log([1], { term: 5, vote: null, commit: 0 }))]);
  fires('DurableTermMonotonic', () => c.afterTick([node('n1', 'follower', 4, log([1], { term: 4, vote: null, commit: 0 }), 2)]));
});
