// Leadership transfer (thesis §3.10): TimeoutNow once the target is caught up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, enc } from './harness.js';

test('§3.10 transfer to a lagging node: it is caught up first, then elected; proposals wait', () => {
  const net = Network.create(3, { preVote: true, checkQuorum: true });
  net.campaign('n1');
  net.cutLink('n1', 'n3');
  for (let k = 0; k < 5; k++) net.propose('n1', `v${k}`);
  assert.ok(net.node('n3').raw.status().lastIndex < net.node('n1').raw.status().lastIndex);
  net.recover();
  assert.equal(net.node('n1').raw.transferLeadership('n3'), true);
  assert.deepEqual(net.node('n1').raw.propose(enc('during')), { ok: false, reason: 'transferring' });
  assert.equal(net.node('n1').raw.status().leadTransferee, 'n3');
  net.stabilize();
  assert.equal(net.leader(), 'n3');
  assert.ok(net.sent.some((m) => m.type === 'timeoutNow' && m.from === 'n1' && m.to === 'n3'));
  // the votes of a transfer bypass the lease of followers that just heard from n1
  assert.ok(net.sent.some((m) => m.type === 'vote' && m.from === 'n3' && m.transfer === true));
  net.propose('n3', 'after');
  for (const id of net.ids()) assert.deepEqual(net.appliedData(id), ['v0', 'v1', 'v2', 'v3', 'v4', 'after'], id);
});

test('§3.10 a transfer that does not finish within an election timeout is aborted', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.isolate('n3');
  net.propose('n1', 'a'); // n3 lags and cannot catch up
  assert.equal(net.node('n1').raw.transferLeadership('n3'), true);
  assert.equal(net.node('n1').raw.propose(enc('x')).ok, false);
  net.tick('n1', 10);
  net.stabilize();
  assert.equal(net.node('n1').raw.status().leadTransferee, null);
  assert.equal(net.node('n1').raw.status().role, 'leader');
  assert.equal(net.propose('n1', 'y').ok, true);
});

test('transferLeadership refuses non-leaders, self, strangers and learners', () => {
  const net = new Network(['n1', 'n2', 'n3'], {}, { voters: ['n1', 'n2'], learners: ['n3'] });
  net.campaign('n1');
  assert.equal(net.node('n2').raw.transferLeadership('n1'), false);
  assert.equal(net.node('n1').raw.transferLeadership('n1'), false);
  assert.equal(net.node('n1').raw.transferLeadership('n9'), false);
  assert.equal(net.node('n1').raw.transferLeadership('n3'), false);
  assert.equal(net.node('n1').raw.transferLeadership('n2'), true);
  net.stabilize();
  assert.equal(net.leader(), 'n2');
});

test('§3.10 TimeoutNow waits until the leader log is committed: clients of the old leader hear from it', () => {
  // 5 nodes: the target alone catching up does not make a quorum with the leader
  const net = Network.create(5);
  net.campaign('n1');
  for (const id of ['n3', 'n4', 'n5']) net.cutLink('n1', id);
  const x = net.propose('n1', 'x');
  assert.ok(x.ok);
  assert.equal(net.node('n2').raw.status().lastIndex, x.index, 'the target holds the whole log');
  assert.ok(net.node('n1').raw.status().commit < x.index, 'but it is not committed');
  assert.equal(net.node('n1').raw.transferLeadership('n2'), true);
  net.stabilize();
  assert.ok(!net.sent.some((m) => m.type === 'timeoutNow'), 'no hand-over while the last entry is uncommitted');
  assert.equal(net.leader(), 'n1');
  net.recover();
  net.tick('n1'); // the heartbeat brings the others back; their acks commit x
  net.stabilize();
  assert.ok(net.sent.some((m) => m.type === 'timeoutNow' && m.to === 'n2'));
  assert.equal(net.leader(), 'n2');
  assert.ok(net.node('n1').applied.some((e) => e.index === x.index), 'x was committed and applied while n1 still led');
});
