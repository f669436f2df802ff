import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LessorProposer } from '../../../src/server/leader/lessor-proposer.js';
import type { Command } from '../../../src/lock-fsm/index.js';

test('one lessor proposal in flight per item; a repeat goes out once the first is settled', async () => {
  const proposed: Command[] = [];
  const settle: (() => void)[] = [];
  const p = new LessorProposer((cmd) => {
    proposed.push(cmd);
    return new Promise<void>((resolve) => settle.push(resolve));
  });
  const expire: Command = { kind: 'expireSession', sessionId: 's1' };
  const delay: Command = { kind: 'endLockDelay', name: 'a' };
  assert.equal(p.proposeDue([expire, delay]), 2);
  // the lessor re-reports both before either commits: nothing new is proposed
  assert.equal(p.proposeDue([expire, delay, expire]), 0);
  assert.equal(p.pending, 2);
  settle[0]!();
  await new Promise((r) => setImmediate(r));
  assert.equal(p.proposeDue([expire, delay]), 1, 'only the settled item may be proposed again');
  assert.deepEqual(proposed.map((c) => c.kind), ['expireSession', 'endLockDelay', 'expireSession']);
  // a different wait on the same lock is a different item
  assert.equal(p.proposeDue([{ kind: 'cancelWait', name: 'a', sessionId: 's1' }, { kind: 'cancelWait', name: 'a', sessionId: 's2' }]), 2);
  // so is a later delay of the same lock, or a later wait of the same session (since)
  assert.equal(p.proposeDue([{ kind: 'endLockDelay', name: 'a', since: 7 }, { kind: 'cancelWait', name: 'a', sessionId: 's1', since: 9 }]), 2);
  assert.equal(p.proposeDue([{ kind: 'endLockDelay', name: 'a', since: 7 }]), 0);
});

/** a node's term and applied index, as the gate reads them from the driver */
class View {
  currentTerm = 3;
  appliedIndex = 0;
}

test("a copy answered 'unknown' holds repeats back until its index is applied or the term changes", async () => {
  const view = new View();
  const answers: ((o: unknown) => void)[] = [];
  const proposed: Command[] = [];
  const p = new LessorProposer((cmd) => {
    proposed.push(cmd);
    return new Promise((resolve) => answers.push(resolve));
  }, view);
  const cancel: Command = { kind: 'cancelWait', name: 'a', sessionId: 's1', since: 4 };
  assert.equal(p.proposeDue([cancel]), 1);
  // the proposal timeout: the entry is at index 10 of term 3 and may still commit
  answers[0]!({ ok: false, kind: 'unknown', index: 10, term: 3 });
  await new Promise((r) => setImmediate(r));
  for (let k = 0; k < 50; k++) assert.equal(p.proposeDue([cancel]), 0, 'no repeat while the first copy can commit');
  assert.equal(p.isHeld(cancel), true);
  view.appliedIndex = 9;
  assert.equal(p.proposeDue([cancel]), 0);
  view.appliedIndex = 10; // index 10 applied: with our copy (then the lessor saw it) or without
  assert.equal(p.proposeDue([cancel]), 1);
  // a new term: the earlier copy's term is over, one new copy per term
  view.currentTerm = 4;
  assert.equal(p.proposeDue([cancel]), 1);
  assert.equal(p.proposeDue([cancel]), 0);
  // the copy of term 3 answers late: it does not release term 4's copy
  answers[1]!({ ok: false, kind: 'lost' });
  await new Promise((r) => setImmediate(r));
  assert.equal(p.proposeDue([cancel]), 0);
  answers[2]!({ ok: true, index: 12, term: 4, result: undefined });
  await new Promise((r) => setImmediate(r));
  assert.equal(p.proposeDue([cancel]), 1, 'applied: a repeat may go (the lessor asks only if the item is still due)');
  assert.equal(proposed.length, 4);
});

test('the re-proposal storm is bounded: with commits slower than the proposal timeout, each item is proposed once per term', async () => {
  const view = new View();
  let next = 100;
  const p = new LessorProposer(() => Promise.resolve({ ok: false, kind: 'unknown', index: next++, term: view.currentTerm }), view);
  const due: Command[] = Array.from({ length: 50 }, (_, k) => ({ kind: 'expireSession', sessionId: `s${k}` }));
  let proposed = 0;
  for (let tick = 0; tick < 200; tick++) {
    proposed += p.proposeDue(due);
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(proposed, 50, 'the log grows by one copy per expiry, not one per retry');
  view.currentTerm = 5;
  for (let tick = 0; tick < 200; tick++) {
    proposed += p.proposeDue(due);
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(proposed, 100);
});
