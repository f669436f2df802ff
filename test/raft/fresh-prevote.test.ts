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

// A wiped member that has heard from a leader (or a candidate with a log) cannot win any
// election: a fresh candidate needs every voter's grant, each from an empty log. With
// Pre-Vote, as raftlock runs, it then holds off campaigning for three more election
// timeouts of silence (Raft.freshAfterLog), so its peers being briefly out of reach does
// not make it pre-vote again and again (docs/membership.md "Incarnations").
const PROD: NodeOptions = { incarnations: true, preVote: true, checkQuorum: true };

test('a wiped member that heard the leader stays quiet while its peers are briefly out of reach', () => {
  const net = Network.create(3, PROD);
  net.campaign('n1');
  assert.ok(net.propose('n1', 'X').ok);
  // the leader's messages to the wiped n2 are lost until n2 heard one heartbeat
  net.drop((m) => m.from === 'n1' && m.to === 'n2' && m.type !== 'heartbeat');
  net.wipe('n2');
  net.run(2);
  assert.equal(net.node('n2').raw.status().standing, 'fresh');
  const preVotes = (): number => net.sent.filter((m) => m.from === 'n2' && m.type === 'preVote').length;
  const before = preVotes();
  net.isolate('n2'); // its peers out of reach for three election timeouts (10 ticks each)
  net.run(30);
  assert.equal(preVotes(), before, 'no pre-vote while the others are briefly out of reach');
  // a longer silence: it campaigns again (a new cluster whose first leader vanished must
  // still be able to bootstrap), with pre-votes that change nobody's term
  net.run(40);
  assert.ok(preVotes() > before, 'after a long silence it pre-votes again');
  net.recover();
  net.run(30);
  assert.equal(net.node('n2').raw.status().standing, 'superseded');
  assert.deepEqual(net.leaders(), ['n1']);
});

test('a brand-new cluster whose first leader lost its disk before anyone stored its bootstrap entry bootstraps again', () => {
  const net = Network.create(3, PROD);
  // n1 wins the unanimous first election; its appends (the bootstrap entry) are lost, only
  // its heartbeats get through: n2 and n3 have heard a leader but hold no log
  net.drop((m) => m.from === 'n1' && (m.type === 'append' || m.type === 'snapshot'));
  net.campaign('n1');
  assert.equal(net.leader(), 'n1');
  net.run(2);
  assert.equal(net.node('n2').raw.status().standing, 'fresh');
  // n1's disk is lost: every voter is fresh again, and the two that heard n1 wait longer
  // before they campaign, but the new n1 has heard nobody with a log and campaigns at once
  net.wipe('n1');
  net.recover();
  net.run(60);
  const leader = net.leader();
  for (const id of ['n1', 'n2', 'n3']) assert.equal(net.node(id).raw.status().standing, 'bound', `${id} bound (leader ${leader})`);
});
