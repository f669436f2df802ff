// A leader that appended its own removal and lost its quorum before that entry committed
// must be able to lead again until the removal commits (Raft thesis §4.2.2: "a server
// that is not part of its own latest configuration should still start new elections, as
// it might still be needed until the Cnew entry is committed"). Configurations take
// effect when appended, so such a node's latest configuration no longer lists it; if it
// never campaigned, nobody might ever lead again. The simulator soak found this (seed
// 701255; docs/simulation.md "Mutation table", removed-never-campaigns):
//   voters n1, n2, n3, n4 bound to their incarnations (PreVote, CheckQuorum, lazy commit);
//   n1's disk is lost, so its votes count for nothing (docs/membership.md "Incarnations");
//   leader n3 appends `removeNode n3`, which reaches nobody, and steps down (check-quorum).
//   n2 and n4 need n3's vote (3 of the 4 voters, n1 not counting); n3 refuses them, its log
//   being longer. n3 itself campaigns under its latest configuration {n1, n2, n4}, counting
//   n2 and n4 but never itself, commits the removal, and steps down; then n2 or n4 leads.
// The same with the rule switched off (RaftConfig.testOnlyNoCampaignWhileRemovalPending)
// never elects a leader again: the test sees the bug.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, type NodeOptions } from './harness.js';

const ELECTION_TICKS = 10;
const OPTS: NodeOptions = { incarnations: true, preVote: true, checkQuorum: true, lazyCommit: true, electionTicks: ELECTION_TICKS, heartbeatTicks: 1 };

/** the soak's dead end, up to the point where n3 has stepped down with its removal pending */
function removedLeaderLostQuorum(opts: NodeOptions): { net: Network; removalIndex: number } {
  const net = Network.create(4, opts);
  net.campaign('n3'); // a new cluster's first election (unanimous) binds n1..n4
  net.propose('n3', 'a');
  net.wipe('n1');
  net.run(3); // n1's new incarnation gets the log, and learns from it that it is superseded
  assert.equal(net.node('n1').raw.status().standing, 'superseded');
  for (const id of ['n2', 'n3', 'n4']) assert.equal(net.node(id).raw.status().standing, 'bound', id);

  net.isolate('n3');
  const removal = net.node('n3').raw.proposeConfChange({ type: 'removeNode', nodeId: 'n3' });
  assert.ok(removal.ok, 'n3 accepts its own removal');
  net.stabilize();
  assert.deepEqual(net.node('n3').raw.status().conf.voters, ['n1', 'n2', 'n4'], 'in force on n3 once appended');
  net.tick('n3', 2 * ELECTION_TICKS); // check-quorum: n3 hears from nobody for a whole period
  net.stabilize();
  assert.equal(net.node('n3').raw.status().role, 'follower', 'n3 stepped down with its removal uncommitted');
  assert.ok(net.node('n3').raw.status().commit < removal.index);
  for (const id of ['n2', 'n4']) assert.deepEqual(net.node(id).raw.status().conf.voters, ['n1', 'n2', 'n3', 'n4'], `${id} never got the removal`);
  net.recover();
  return { net, removalIndex: removal.index };
}

test('a leader that appended its own removal and lost its quorum campaigns again, commits the removal and steps down; then the others elect a leader', () => {
  const { net, removalIndex } = removedLeaderLostQuorum(OPTS);
  const term = net.node('n3').raw.status().term;
  net.run(20 * ELECTION_TICKS);
  assert.ok(net.sent.some((m) => m.from === 'n3' && m.type === 'append' && m.term > term), 'n3 led again (in a later term), to commit its own removal');
  const leader = net.leader();
  assert.ok(leader === 'n2' || leader === 'n4', `a member of the new configuration leads (${leader})`);
  for (const id of ['n2', 'n3', 'n4']) {
    assert.ok(net.node(id).raw.status().commit >= removalIndex, `${id} learned that the removal committed`);
    assert.deepEqual(net.node(id).raw.status().conf.voters, ['n1', 'n2', 'n4'], id);
  }
  const res = net.propose(leader, 'b');
  assert.ok(res.ok);
  net.tick(leader);
  net.stabilize();
  const other = leader === 'n2' ? 'n4' : 'n2';
  assert.ok(net.appliedData(other).includes('b'), 'the new configuration commits (n2 + n4)');
  // and n3, which knows that its removal committed, never campaigns again
  const asked = net.sent.length;
  net.isolate('n3');
  net.tick('n3', 10 * ELECTION_TICKS);
  net.stabilize();
  assert.equal(net.node('n3').raw.status().role, 'follower');
  assert.ok(!net.sent.slice(asked).some((m) => m.from === 'n3'), 'n3 sends nothing once its removal is committed');
});

test('the same dead end with the rule switched off (testOnlyNoCampaignWhileRemovalPending): no leader, ever', () => {
  const { net } = removedLeaderLostQuorum({ ...OPTS, testOnlyNoCampaignWhileRemovalPending: true });
  net.run(30 * ELECTION_TICKS);
  assert.deepEqual(net.leaders(), [], 'n2 and n4 need n3, which refuses them and never campaigns');
});

/** thesis Figure 4.6: n1 removes itself from {n1, n2}; the entry reaches only n1, which then restarts */
function twoServerRemoval(opts: NodeOptions): Network {
  const net = Network.create(2, opts);
  net.campaign('n1');
  net.propose('n1', 'a');
  net.cutLink('n1', 'n2');
  assert.ok(net.node('n1').raw.proposeConfChange({ type: 'removeNode', nodeId: 'n1' }).ok);
  net.stabilize();
  net.restart('n1'); // a crash: stepping down by check-quorum is not the only way out of office
  net.recover();
  return net;
}

test('thesis Figure 4.6: n1 removed itself from {n1, n2} and crashed before the entry reached n2: n1 leads again until the removal commits, then n2 leads alone', () => {
  const net = twoServerRemoval({ preVote: true, checkQuorum: true });
  assert.deepEqual(net.node('n1').raw.status().conf.voters, ['n2'], 'after the restart n1 is not in its own latest configuration');
  net.run(20 * ELECTION_TICKS);
  assert.equal(net.leader(), 'n2');
  assert.deepEqual(net.node('n2').raw.status().conf.voters, ['n2']);
  assert.deepEqual(net.appliedData('n2'), ['a']);
  assert.ok(net.sent.some((m) => m.from === 'n1' && m.type === 'append' && m.entries.some((e) => e.kind === 'conf')), 'n1, leading again, shipped its removal');
});

test('thesis Figure 4.6 with the rule switched off: n2 needs n1, and n1 never campaigns', () => {
  const net = twoServerRemoval({ preVote: true, checkQuorum: true, testOnlyNoCampaignWhileRemovalPending: true });
  net.run(20 * ELECTION_TICKS);
  assert.deepEqual(net.leaders(), []);
});

test('a removed follower that missed the leader\'s last word about its removal campaigns, but a healthy leader keeps its term (the lease)', () => {
  const net = Network.create(3, { preVote: true, checkQuorum: true, electionTicks: ELECTION_TICKS });
  net.campaign('n1');
  // n3 receives its removal, but not the append that tells it the removal committed
  net.drop((m) => m.to === 'n3' && m.type === 'append' && m.entries.length === 0);
  const res = net.node('n1').raw.proposeConfChange({ type: 'removeNode', nodeId: 'n3' });
  assert.ok(res.ok);
  net.stabilize();
  net.recover();
  assert.equal(net.node('n1').raw.status().progress!['n3'], undefined, 'dropped once the removal committed');
  assert.ok(net.node('n3').raw.status().commit < res.index, 'n3 does not know its removal committed');
  const term = net.node('n1').raw.status().term;
  net.run(10 * ELECTION_TICKS);
  assert.ok(net.sent.some((m) => m.from === 'n3' && m.type === 'preVote'), 'n3 campaigns (pre-vote)');
  assert.equal(net.leader(), 'n1');
  assert.equal(net.node('n1').raw.status().term, term, 'n1 and n2 ignore it while they hear from each other');
});
