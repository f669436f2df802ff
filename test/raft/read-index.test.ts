// ReadIndex (thesis §6.4): linearizable reads without writing the log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, SCRIPTED_ELECTIONS, enc } from './harness.js';

test('§6.4 many reads between two Ready iterations share one heartbeat round', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.propose('n1', 'a');
  const commit = net.node('n1').raw.status().commit;
  const sentBefore = net.sent.length;
  for (let ctx = 1; ctx <= 100; ctx++) assert.equal(net.node('n1').raw.readIndex(ctx), true);
  net.stabilize();
  const rounds = net.sent.slice(sentBefore).filter((m) => m.type === 'heartbeat' && m.ctx > 0);
  assert.equal(rounds.length, 2, 'one round = one heartbeat per follower');
  const rs = net.node('n1').readStates;
  assert.equal(rs.length, 100);
  assert.deepEqual(rs.map((r) => r.ctx), Array.from({ length: 100 }, (_, k) => k + 1));
  assert.ok(rs.every((r) => r.index === commit));
});

test('§6.4 the round that answers a read started after the read was requested', () => {
  const net = Network.create(3);
  net.campaign('n1');
  const n1 = net.node('n1').raw;
  n1.readIndex(1);
  net.handleReady('n1'); // round 1 starts now
  n1.readIndex(2); // arrives while round 1 is in flight: must wait for a later round
  net.deliver(); // followers get round 1
  net.handleReady('n2');
  net.handleReady('n3');
  net.deliver(); // acks of round 1 reach n1
  net.handleReady('n1');
  assert.deepEqual(net.node('n1').readStates.map((r) => r.ctx), [1]);
  net.stabilize();
  assert.deepEqual(net.node('n1').readStates.map((r) => r.ctx), [1, 2]);
});

test('§6.4 a single-node leader answers reads at once (itself is the quorum)', () => {
  const net = Network.create(1);
  net.campaign('n1');
  net.node('n1').raw.readIndex(9);
  net.stabilize();
  assert.deepEqual(net.node('n1').readStates, [{ index: 1, ctx: 9 }]);
});

test('§6.4 reads wait until the new leader has committed an entry of its own term', () => {
  const net = Network.create(3, SCRIPTED_ELECTIONS);
  net.campaign('n1');
  net.propose('n1', 'a');
  // n2 becomes leader; its noop is held back, so it does not know the commit index yet
  net.drop((m) => m.type === 'append' && m.from === 'n2');
  net.campaign('n2');
  assert.equal(net.node('n2').raw.status().role, 'leader');
  assert.equal(net.node('n2').raw.readIndex(5), true);
  net.stabilize();
  assert.equal(net.sent.filter((m) => m.type === 'heartbeat' && m.from === 'n2' && m.ctx > 0).length, 0, 'no round yet');
  assert.deepEqual(net.node('n2').readStates, []);
  net.recover();
  net.run(2);
  const rs = net.node('n2').readStates;
  assert.equal(rs.length, 1);
  assert.equal(rs[0]!.index, net.node('n2').raw.status().commit, 'answered at the noop\'s commit (>= every earlier write)');
  assert.ok(rs[0]!.index >= 3);
});

test('§6.4 a deposed leader never answers a read', () => {
  const net = Network.create(3, { preVote: true, checkQuorum: true });
  net.campaign('n1');
  net.isolate('n1');
  assert.equal(net.node('n1').raw.readIndex(7), true);
  net.stabilize(); // round starts; its heartbeats are lost
  for (let t = 0; t < 40; t++) {
    net.tick('n2');
    net.tick('n3');
    net.stabilize();
  }
  const newLeader = net.leaders().find((id) => id !== 'n1')!;
  net.node(newLeader).raw.propose(enc('w'));
  net.stabilize();
  net.recover();
  net.run(5);
  assert.equal(net.node('n1').raw.status().role, 'follower');
  assert.deepEqual(net.node('n1').readStates, [], 'the read of the old leader was dropped, not answered');
  assert.equal(net.node('n1').raw.readIndex(8), false, 'followers refuse reads');
});

test('heartbeat responses from non-voters (learners) do not complete a round', () => {
  const net = new Network(['n1', 'n2', 'n3'], {}, { voters: ['n1', 'n2'], learners: ['n3'] });
  net.campaign('n1');
  net.cutLink('n1', 'n2');
  net.node('n1').raw.readIndex(1);
  net.stabilize();
  assert.deepEqual(net.node('n1').readStates, [], 'only the learner answered');
  net.recover();
  net.run(2);
  assert.equal(net.node('n1').readStates.length, 1);
});
