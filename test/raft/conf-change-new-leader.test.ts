// A new leader changes no membership before an entry of its own term commits (Raft thesis
// ch. 4; Ongaro, "bug in single-server membership changes", raft-dev 2015). The scenario,
// 5 nodes with PreVote, CheckQuorum and lazy commit, voters n1–n4 and learner n5:
//   1. leader n1 (term 1) appends `addVoter n5` at index 3; only n5 receives it; n1 dies;
//   2. n3 wins term 2 with n2, n3, n4 (its conf: n1–n4) and at once proposes
//      `removeNode n1`, which — in force once appended — commits on {n2, n3}, with it
//      n3's noop at index 3;
//   3. n1 restarts and wins term 3 with n4 and n5 under its own configuration n1–n5, and
//      commits its `addVoter n5` at index 3, where n2 has applied n3's noop.
// With the rule in place (src/raft/core/raft.ts proposeConfChange), step 2 is refused with
// 'term_not_committed' and the rest of the story is harmless. The same scenario with the
// rule switched off (RaftConfig.unsafeAllowConfChangeBeforeTermCommit) must diverge: the
// harness's state-machine-safety check throws, which shows the test sees the bug.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network } from './harness.js';
import type { ConfState, ProposeResult } from '../../src/raft/core/types.js';

const IDS = ['n1', 'n2', 'n3', 'n4', 'n5'];
const CONF: ConfState = { voters: ['n1', 'n2', 'n3', 'n4'], learners: ['n5'] };
const ELECTION_TICKS = 10;

/** ticks that end `id`'s leader lease (it stops ignoring candidates), then forget what
 *  the ticks made it send (an election of its own would change the story) */
function expireLease(net: Network, ...ids: string[]): void {
  for (const id of ids) net.tick(id, ELECTION_TICKS);
  while (ids.some((id) => net.handleReady(id)));
  net.queue = net.queue.filter((m) => !ids.includes(m.from));
}

function scenario(unsafe: boolean): { removal: ProposeResult; n2Applied: string[]; n1Applied: string[] } {
  const net = new Network(IDS, { preVote: true, checkQuorum: true, lazyCommit: true, electionTicks: ELECTION_TICKS, heartbeatTicks: 1, unsafeAllowConfChangeBeforeTermCommit: unsafe }, CONF);
  net.campaign('n1');
  net.propose('n1', 'a');
  net.tick('n1');
  net.stabilize(); // a heartbeat carries the (lazy) commit index to everyone
  for (const id of IDS) assert.equal(net.node(id).raw.status().commit, 2, `${id} committed noop + a`);

  // 1. addVoter n5 reaches only n5; n1 dies
  for (const id of ['n2', 'n3', 'n4']) net.cutLink('n1', id);
  assert.equal(net.node('n1').raw.proposeConfChange({ type: 'addVoter', nodeId: 'n5' }).ok, true);
  net.stabilize();
  assert.equal(net.node('n5').storage.lastIndex(), 3, 'n5 holds addVoter n5 at index 3');
  assert.equal(net.node('n1').raw.status().commit, 2, 'addVoter n5 is not committed');
  net.isolate('n1');
  net.isolate('n5');

  // 2. n3 wins term 2 with n2 and n4; its appends and heartbeats never reach n4
  expireLease(net, 'n2', 'n3', 'n4');
  net.drop((m) => m.from === 'n3' && m.to === 'n4' && (m.type === 'append' || m.type === 'heartbeat'));
  net.campaign('n3');
  const n3 = net.node('n3').raw.status();
  assert.equal(n3.role, 'leader');
  assert.equal(n3.term, 2);
  assert.equal(net.node('n2').storage.lastIndex(), 3, "n2 holds n3's noop at index 3");
  assert.equal(net.node('n4').storage.lastIndex(), 2, "n4 does not hold n3's noop");
  const removal = net.node('n3').raw.proposeConfChange({ type: 'removeNode', nodeId: 'n1' });
  net.stabilize();
  net.tick('n3');
  net.stabilize(); // lazy commit: n2 learns the commit index with the next heartbeat

  // 3. n1 restarts; {n2, n3} | {n1, n4, n5}; n1 campaigns until it leads
  net.recover();
  net.restart('n1');
  for (const a of ['n2', 'n3']) for (const b of ['n1', 'n4', 'n5']) net.cutLink(a, b);
  expireLease(net, 'n4', 'n5');
  for (let k = 0; k < 3 && net.node('n1').raw.status().role !== 'leader'; k++) net.campaign('n1'); // a pre-vote lost to n4's term 2 raises n1 to it
  assert.equal(net.node('n1').raw.status().role, 'leader', 'n1 wins with n4 and n5');
  assert.equal(net.node('n1').raw.status().term, 3);
  net.tick('n1');
  net.stabilize();
  const kinds = (id: string): string[] => net.node(id).applied.map((e) => `${e.index}/${e.term}:${e.kind}`);
  return { removal, n2Applied: kinds('n2'), n1Applied: kinds('n1') };
}

test("a new leader changes no membership before its term commits: n3's removeNode n1 right after the failover is refused, so n1's old addVoter n5 cannot commit over it", () => {
  const r = scenario(false);
  assert.deepEqual(r.removal, { ok: false, reason: 'term_not_committed' });
  assert.ok(!r.n2Applied.includes('3/2:noop'), `n2 applied n3's noop: ${r.n2Applied}`);
  assert.ok(r.n1Applied.includes('3/1:conf'), `n1 (term 3) commits the addVoter n5 of term 1: ${r.n1Applied}`);
});

test('the same failover with the rule switched off (unsafeAllowConfChangeBeforeTermCommit) diverges: the test sees the bug', () => {
  assert.throws(() => scenario(true), /SAFETY: .* at 3, another node applied/);
});

test('a new leader accepts a conf change once its noop has committed, and a transfer target is gated the same way', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.drop((m) => m.type === 'append' || m.type === 'appendResp');
  net.node('n1').raw.transferLeadership('n2');
  net.stabilize(); // n2 holds the whole log: timeoutNow, n2 is elected, its noop is held back
  assert.equal(net.node('n2').raw.status().role, 'leader');
  assert.deepEqual(net.node('n2').raw.proposeConfChange({ type: 'addLearner', nodeId: 'n4' }), { ok: false, reason: 'term_not_committed' });
  net.recover();
  net.tick('n2');
  net.stabilize();
  assert.equal(net.node('n2').raw.proposeConfChange({ type: 'addLearner', nodeId: 'n4' }).ok, true);
});
