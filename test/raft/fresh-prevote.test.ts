// A member that lost its disk restarts fresh (empty log, the seed configuration, no
// bootstrap entry). Fresh, it may campaign: a brand-new cluster's first election needs it.
// In a cluster running neither Pre-Vote nor Check-Quorum, its real vote requests of a
// higher term deposed the leader once per election timeout, although nobody with a log
// grants them, so nothing committed — not even the operator's removal of that member
// (simulator seed 808003: terms 74 → 121, ten short-lived leaders, commit index stuck in
// the 1,525 ticks after healing). A fresh node now always pre-votes (Raft.freshPreVote,
// docs/raft-core.md "Incarnations").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, SCRIPTED_ELECTIONS } from './harness.js';
import type { NodeOptions } from './harness.js';

const OPTS: NodeOptions = { incarnations: true, preVote: false, checkQuorum: false };

/** n1 leads {n1,n2,n3} and commits X; n2's disk is lost and the leader's messages to it
 *  are lost (in the soak: n2 was being removed, so the leader no longer sent to it) */
function wipedN2CutOffFromLeader(opts: NodeOptions): { net: Network; term: number } {
  const net = Network.create(3, opts);
  net.campaign('n1');
  assert.equal(net.leader(), 'n1');
  assert.ok(net.propose('n1', 'X').ok);
  net.wipe('n2');
  assert.equal(net.node('n2').raw.status().standing, 'fresh');
  net.drop((m) => m.from === 'n1' && m.to === 'n2');
  return { net, term: net.node('n1').raw.status().term };
}

test('a wiped member that campaigns (no Pre-Vote, no Check-Quorum) does not depose the leader', () => {
  const { net, term } = wipedN2CutOffFromLeader(OPTS);
  net.run(100); // five or more of n2's election timeouts
  assert.deepEqual(net.leaders(), ['n1'], 'n1 still leads');
  assert.equal(net.node('n1').raw.status().term, term, 'no term was raised by n2');
  assert.equal(net.node('n3').raw.status().term, term);
  const before = net.node('n1').raw.status().commit;
  assert.ok(net.propose('n1', 'Y').ok);
  assert.ok(net.node('n1').raw.status().commit > before, 'the leader still commits');
  assert.equal(net.sent.some((m) => m.from === 'n2' && m.type === 'vote'), false, 'n2 sent only pre-votes');
  // its pre-votes were refused with the cluster's term; once the leader reaches it, n2
  // learns from the log that it is superseded and stops campaigning
  net.recover();
  net.run(30);
  assert.equal(net.node('n2').raw.status().standing, 'superseded');
  assert.deepEqual(net.leaders(), ['n1']);
  assert.equal(net.node('n1').raw.status().term, term);
});

test('a brand-new cluster still bootstraps without Pre-Vote (fresh nodes pre-vote, then vote)', () => {
  const net = Network.create(3, OPTS);
  net.campaign('n1');
  assert.equal(net.leader(), 'n1');
  assert.ok(net.propose('n1', 'X').ok);
  for (const id of ['n1', 'n2', 'n3']) assert.equal(net.node(id).raw.status().standing, 'bound', `${id} bound`);
});

test('mutation check: with testOnlyFreshCampaignsWithoutPreVote the wiped member deposes the leader', () => {
  // the leader lease, which holds without Check-Quorum too, is a second defense here: off,
  // so that this shows what the fresh node's Pre-Vote alone prevents
  const { net, term } = wipedN2CutOffFromLeader({ ...OPTS, ...SCRIPTED_ELECTIONS, testOnlyFreshCampaignsWithoutPreVote: true });
  net.run(100);
  assert.ok(net.node('n1').raw.status().term > term, 'n2\'s vote requests raised the term');
  assert.equal(net.sent.some((m) => m.from === 'n2' && m.type === 'vote'), true);
});
