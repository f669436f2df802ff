// A learner can hold the newest log of a cluster, and then it must be able to lead once.
// The simulator soak found the dead end (seed 806416), here on four nodes:
//   voters n2, n3, n4 bound to their incarnations, n1 demoted to learner (committed);
//   leader n3 (term T) promotes n1 again (`addVoter n1`), which reaches nobody, and steps
//   down (check-quorum); n2 wins term T+1 under {n2, n3, n4} with n4's vote, and its noop
//   reaches only the learner n1; then n2's disk is lost (its votes count for nothing,
//   docs/membership.md "Incarnations").
// n3's latest configuration {n1, n2, n3, n4} needs n1 and n4: n1 refuses, its log (last
// term T+1) being more up to date than n3's (§5.4.1). n4's configuration {n2, n3, n4}
// needs n3, whose log is longer. Nobody else holds the term-T+1 entry, so no voter can
// ever win; only n1 can. The rule (docs/raft-core.md "Learners with uncommitted entries"):
// a learner whose log holds entries above its commit index campaigns under its latest
// configuration, counting that configuration's voters only (never itself) — the quorum
// argument of any candidate — commits, and steps down; then a voter leads.
// The same with the rule switched off (RaftConfig.testOnlyNoLearnerCampaign) never
// elects a leader again: the test sees the bug.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, type NodeOptions } from './harness.js';

const ELECTION_TICKS = 10;
const OPTS: NodeOptions = { incarnations: true, preVote: true, checkQuorum: true, lazyCommit: true, electionTicks: ELECTION_TICKS, heartbeatTicks: 1 };

function learnerHoldsNewestLog(opts: NodeOptions): Network {
  const net = Network.create(4, opts);
  net.campaign('n3'); // a new cluster's first election (unanimous) binds n1..n4
  net.propose('n3', 'a');
  assert.ok(net.node('n3').raw.proposeConfChange({ type: 'addLearner', nodeId: 'n1' }).ok, 'n3 demotes n1');
  net.stabilize();
  net.tick('n3');
  net.stabilize(); // everyone learns that the demotion committed
  for (const id of net.ids()) assert.deepEqual(net.node(id).raw.status().conf.learners, ['n1'], id);
  assert.equal(net.node('n1').raw.status().standing, 'unbound');

  net.isolate('n3');
  const promotion = net.node('n3').raw.proposeConfChange({ type: 'addVoter', nodeId: 'n1' });
  assert.ok(promotion.ok, 'n3 promotes n1 again');
  net.stabilize();
  net.tick('n3', 2 * ELECTION_TICKS); // check-quorum: n3 steps down
  net.stabilize();
  assert.equal(net.node('n3').raw.status().role, 'follower');
  const termT = net.node('n3').raw.status().term;

  // n2 wins term T+1 with n4 (n3 is cut off); its noop reaches only n1
  net.drop((m) => (m.from === 'n2' && m.to !== 'n1' && (m.type === 'append' || m.type === 'heartbeat')) || ((m.from === 'n3' || m.from === 'n4') && m.type === 'preVote'));
  for (let t = 0; t < 10 * ELECTION_TICKS && net.node('n2').raw.status().role !== 'leader'; t++) net.run(1);
  assert.equal(net.node('n2').raw.status().role, 'leader');
  assert.equal(net.node('n2').raw.status().term, termT + 1);
  assert.equal(net.node('n1').raw.status().lastIndex, promotion.index, 'n1 got the term-T+1 noop at the promotion\'s index');
  assert.equal(net.logOf('n1').at(-1), `${promotion.index}/${termT + 1}:noop`);
  assert.deepEqual([...net.node('n3').raw.status().conf.voters].sort(), ['n1', 'n2', 'n3', 'n4'], 'n3 has the promotion');
  net.wipe('n2');
  net.recover();
  return net;
}

test('a learner holding the only copy of the newest entries leads once (commits, steps down), then a voter leads', () => {
  const net = learnerHoldsNewestLog(OPTS);
  net.run(30 * ELECTION_TICKS);
  assert.ok(net.sent.some((m) => m.from === 'n1' && m.type === 'append'), 'n1 led');
  const leader = net.leader();
  assert.ok(leader === 'n3' || leader === 'n4', `a voter leads (${leader})`);
  for (const id of ['n1', 'n3', 'n4']) assert.deepEqual(net.node(id).raw.status().conf.voters, ['n2', 'n3', 'n4'], `${id}: the promotion was overwritten`);
  assert.ok(net.propose(leader, 'b').ok);
  net.tick(leader);
  net.stabilize();
  for (const id of ['n1', 'n3', 'n4']) assert.deepEqual(net.appliedData(id).slice(-1), ['b'], id);
});

test('the same dead end with the rule switched off (testOnlyNoLearnerCampaign): no leader, ever', () => {
  const net = learnerHoldsNewestLog({ ...OPTS, testOnlyNoLearnerCampaign: true });
  net.run(30 * ELECTION_TICKS);
  assert.deepEqual(net.leaders(), []);
});
