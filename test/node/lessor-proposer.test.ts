import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LessorProposer } from '../../src/node/lessor-proposer.js';
import type { Command } from '../../src/lock-fsm/index.js';

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
