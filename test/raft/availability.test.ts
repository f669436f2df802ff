// Pre-Vote (thesis §9.6), Check-Quorum and the leader lease (thesis §6.2, §4.2.3): a
// partitioned or rejoining node never disrupts a healthy leader, and a leader that lost
// its majority steps down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network } from './harness.js';

function rejoinScenario(opts: { preVote: boolean; checkQuorum: boolean }): { termBefore: number; termAfter: number; leaderAfter: string; n3Term: number } {
  const net = Network.create(3, opts);
  net.campaign('n1');
  net.propose('n1', 'a');
  const termBefore = net.node('n1').raw.status().term;
  // n3 is cut off and times out over and over
  net.isolate('n3');
  net.run(100);
  const n3Term = net.node('n3').raw.status().term;
  net.recover();
  net.run(50);
  const leaderAfter = net.leader();
  return { termBefore, termAfter: net.node(leaderAfter).raw.status().term, leaderAfter, n3Term };
}

test('thesis §9.6 without Pre-Vote a rejoining node with an inflated term disrupts the leader', () => {
  const r = rejoinScenario({ preVote: false, checkQuorum: false });
  assert.ok(r.n3Term > r.termBefore + 3, `isolated n3 kept raising its term (${r.n3Term})`);
  assert.ok(r.termAfter >= r.n3Term, 'the cluster had to move to n3\'s term: an election happened');
});

test('thesis §9.6 with Pre-Vote a rejoining node does not disrupt a healthy leader', () => {
  const r = rejoinScenario({ preVote: true, checkQuorum: true });
  assert.equal(r.n3Term, r.termBefore, 'pre-votes never raise the term');
  assert.equal(r.leaderAfter, 'n1');
  assert.equal(r.termAfter, r.termBefore);
});

test('thesis §4.2.3 leader lease: with Check-Quorum, followers ignore votes while they hear from a leader', () => {
  const net = Network.create(3, { checkQuorum: true });
  net.campaign('n1');
  const term = net.node('n1').raw.status().term;
  // n3 (no pre-vote) campaigns with a higher term; n2 heard from n1 recently and ignores it
  net.cutLink('n3', 'n1');
  net.node('n3').raw.campaign();
  net.stabilize();
  assert.equal(net.node('n2').raw.status().term, term, 'n2 did not even adopt the higher term');
  assert.equal(net.node('n2').raw.status().leader, 'n1');
  assert.notEqual(net.node('n3').raw.status().role, 'leader');
});

test('thesis §6.2 Check-Quorum: a leader that has not heard from a majority within an election timeout steps down', () => {
  const net = Network.create(3, { checkQuorum: true, preVote: true });
  net.campaign('n1');
  net.isolate('n1');
  // n1 keeps leading for at most about one election timeout...
  net.tick('n1', 9);
  net.stabilize();
  assert.equal(net.node('n1').raw.status().role, 'leader');
  // ...then steps down once it has gone a full election timeout without a quorum
  net.tick('n1', 12);
  net.stabilize();
  assert.equal(net.node('n1').raw.status().role, 'follower');
  assert.equal(net.node('n1').raw.status().leader, null);
  // the majority side elects a new leader; n1 rejoins as a follower
  net.run(40);
  const newLeader = net.leader();
  assert.notEqual(newLeader, 'n1');
  net.recover();
  net.run(20);
  assert.equal(net.leader(), newLeader);
  assert.equal(net.node('n1').raw.status().leader, newLeader);
});

test('without Check-Quorum, an isolated leader keeps its role (the behaviour Check-Quorum fixes)', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.isolate('n1');
  net.tick('n1', 100);
  net.stabilize();
  assert.equal(net.node('n1').raw.status().role, 'leader');
});

test('a stale leader learns the new term from any follower and steps down (pre-vote/check-quorum)', () => {
  const net = Network.create(3, { checkQuorum: true, preVote: true });
  net.campaign('n1');
  net.isolate('n1');
  for (let t = 0; t < 40; t++) {
    // n2 and n3 take over in a later term; n1 receives no ticks, so it still thinks it leads
    net.tick('n2');
    net.tick('n3');
    net.stabilize();
  }
  assert.equal(net.node('n1').raw.status().role, 'leader');
  const newLeader = net.leaders().find((id) => id !== 'n1')!;
  assert.ok(newLeader);
  net.recover();
  net.tick('n1'); // a heartbeat of the old term reaches the others, who answer with their term
  net.stabilize();
  assert.equal(net.node('n1').raw.status().role, 'follower');
  assert.equal(net.leader(), newLeader);
});

test('Pre-Vote: a node whose log is behind cannot even start a real election', () => {
  const net = Network.create(3, { preVote: true });
  net.campaign('n1');
  net.cutLink('n1', 'n3');
  net.propose('n1', 'a'); // n3 misses it
  net.cutLink('n1', 'n2'); // now n1 is gone for everyone
  const term = net.node('n2').raw.status().term;
  net.node('n3').raw.campaign();
  net.stabilize();
  assert.equal(net.node('n3').raw.status().term, term, 'pre-vote rejected by n2 (more up-to-date): no term bump');
  assert.notEqual(net.node('n3').raw.status().role, 'leader');
  net.node('n2').raw.campaign();
  net.stabilize();
  assert.ok(net.leaders().includes('n2'), 'the up-to-date n2 wins (n1 is cut off and does not know yet)');
});
