// Membership changes one server at a time (thesis ch. 4) and learners (thesis §4.2.1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, SCRIPTED_ELECTIONS, enc } from './harness.js';
import { applyConfChange, ConfChangeError, ConfHistory, decodeConfChange, encodeConfChange } from '../../src/raft/core/conf.js';
import type { ConfChange, ConfState } from '../../src/raft/core/types.js';
import { MemoryStorage } from '../../src/raft/core/storage.js';

const conf3: ConfState = { voters: ['n1', 'n2', 'n3'], learners: [] };

function proposeConf(net: Network, leader: string, cc: ConfChange): void {
  const res = net.node(leader).raw.proposeConfChange(cc);
  assert.equal(res.ok, true, JSON.stringify(res));
  net.stabilize();
}

test('conf codec: round trip, and clear errors for bad input', () => {
  const cc: ConfChange = { type: 'addVoter', nodeId: 'n4', context: enc('http://10.0.0.4:7104') };
  assert.deepEqual(decodeConfChange(encodeConfChange(cc)), cc);
  assert.deepEqual(decodeConfChange(encodeConfChange({ type: 'removeNode', nodeId: 'x' })), { type: 'removeNode', nodeId: 'x' });
  const bad = ['', '{', '[]', '{"type":"addVoter"}', '{"type":"boom","nodeId":"a"}', '{"type":"addVoter","nodeId":""}', '{"type":"addVoter","nodeId":"a","context":"zz"}', '{"type":"addVoter","nodeId":"a","extra":1}'];
  for (const b of bad) assert.throws(() => decodeConfChange(enc(b)), ConfChangeError, b);
  assert.throws(() => decodeConfChange(new Uint8Array([0xff, 0xfe])), ConfChangeError);
  assert.throws(() => encodeConfChange({ type: 'addVoter', nodeId: '' }), ConfChangeError);
});

test('applyConfChange: add, promote, demote, remove; pure', () => {
  const c0: ConfState = { voters: ['a'], learners: [] };
  const c1 = applyConfChange(c0, { type: 'addLearner', nodeId: 'b' });
  assert.deepEqual(c1, { voters: ['a'], learners: ['b'] });
  const c2 = applyConfChange(c1, { type: 'addVoter', nodeId: 'b' });
  assert.deepEqual(c2, { voters: ['a', 'b'], learners: [] });
  assert.deepEqual(applyConfChange(c2, { type: 'addVoter', nodeId: 'b' }), c2, 'idempotent');
  assert.deepEqual(applyConfChange(c2, { type: 'addLearner', nodeId: 'a' }), { voters: ['b'], learners: ['a'] });
  assert.deepEqual(applyConfChange(c2, { type: 'removeNode', nodeId: 'a' }), { voters: ['b'], learners: [] });
  assert.deepEqual(applyConfChange(c2, { type: 'removeNode', nodeId: 'zz' }), c2);
  assert.deepEqual(c0, { voters: ['a'], learners: [] }, 'input untouched');
});

test('ConfHistory.at: the configuration in force at an index, also after compaction to the commit index', () => {
  const h = new ConfHistory(conf3);
  h.record(5, { type: 'addLearner', nodeId: 'n4' });
  h.record(9, { type: 'removeNode', nodeId: 'n3' });
  assert.deepEqual(h.at(4), conf3);
  assert.deepEqual(h.at(5).learners, ['n4']);
  assert.deepEqual(h.at(8).voters, ['n1', 'n2', 'n3']);
  assert.deepEqual(h.at(9).voters, ['n1', 'n2']);
  h.compactTo(6); // commit index 6: the removal at 9 is still pending
  assert.deepEqual(h.at(6), { voters: ['n1', 'n2', 'n3'], learners: ['n4'] });
  assert.deepEqual(h.current().voters, ['n1', 'n2']);
});

test('thesis ch.4: add a voter to a 3-node cluster; the new node catches up and counts toward quorum', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.propose('n1', 'a');
  // n4 joins with the cluster's bootstrap conf in its storage (see docs/raft-core.md)
  net.addNode('n4', conf3, new MemoryStorage(conf3));
  proposeConf(net, 'n1', { type: 'addVoter', nodeId: 'n4' });
  for (const id of net.ids()) assert.deepEqual(net.node(id).raw.status().conf.voters, ['n1', 'n2', 'n3', 'n4'], id);
  assert.deepEqual(net.appliedData('n4'), ['a']);
  // 4 voters: quorum is 3, so with n2 and n3 down n1 + n4 cannot commit
  net.isolate('n2');
  net.isolate('n3');
  net.propose('n1', 'b');
  assert.equal(net.appliedData('n4').includes('b'), false);
  net.recover();
  net.isolate('n3');
  net.run(2);
  assert.equal(net.appliedData('n4').at(-1), 'b');
});

test('thesis ch.4: one change at a time — a second change waits until the first commits', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.cutLink('n1', 'n2');
  net.cutLink('n1', 'n3');
  assert.equal(net.node('n1').raw.proposeConfChange({ type: 'addLearner', nodeId: 'n4' }).ok, true);
  assert.deepEqual(net.node('n1').raw.proposeConfChange({ type: 'addLearner', nodeId: 'n5' }), { ok: false, reason: 'conf_change_pending' });
  net.recover();
  net.run(2);
  assert.equal(net.node('n1').raw.proposeConfChange({ type: 'addLearner', nodeId: 'n5' }).ok, true);
  assert.deepEqual(net.node('n1').raw.proposeConfChange({ type: 'removeNode', nodeId: 'nope' }), { ok: false, reason: 'conf_change_pending' });
  net.stabilize();
  assert.deepEqual(net.node('n1').raw.proposeConfChange({ type: 'removeNode', nodeId: 'nope' }), { ok: false, reason: 'unknown_node' });
  assert.deepEqual(net.node('n1').raw.proposeConfChange({ type: 'addVoter', nodeId: '' }), { ok: false, reason: 'invalid_conf_change' });
  assert.deepEqual(net.node('n2').raw.proposeConfChange({ type: 'addVoter', nodeId: 'n6' }), { ok: false, reason: 'not_leader' });
});

test('thesis ch.4: remove a follower; the rest keep committing with the smaller quorum', () => {
  const net = Network.create(3);
  net.campaign('n1');
  proposeConf(net, 'n1', { type: 'removeNode', nodeId: 'n3' });
  assert.deepEqual(net.node('n1').raw.status().conf.voters, ['n1', 'n2']);
  assert.equal(net.node('n1').raw.status().progress!['n3'], undefined, 'dropped once the removal committed');
  assert.deepEqual(net.node('n3').raw.status().conf.voters, ['n1', 'n2'], 'n3 received the entry that removes it');
  net.isolate('n3');
  net.propose('n1', 'x');
  assert.deepEqual(net.appliedData('n2'), ['x']);
  // the removed node never campaigns once it knows its removal committed (the leader's
  // last append told it; docs/raft-core.md "Removed, but not yet committed")
  net.tick('n3', 100);
  net.stabilize();
  assert.equal(net.node('n3').raw.status().role, 'follower');
});

test('thesis §4.2.2: a leader removed from the conf steps down once that entry commits', () => {
  const net = Network.create(3, { checkQuorum: true, preVote: true });
  net.campaign('n1');
  const res = net.node('n1').raw.proposeConfChange({ type: 'removeNode', nodeId: 'n1' });
  assert.equal(res.ok, true);
  // still leading (not counting itself) until the entry commits…
  assert.equal(net.node('n1').raw.status().role, 'leader');
  net.stabilize();
  // …then it steps down and never campaigns again
  assert.equal(net.node('n1').raw.status().role, 'follower');
  assert.equal(net.node('n2').raw.status().commit >= (res.ok ? res.index : 0), true, 'the others learned the commit');
  net.run(60);
  const leader = net.leader();
  assert.ok(leader === 'n2' || leader === 'n3');
  net.propose(leader, 'y');
  assert.deepEqual(net.appliedData(leader === 'n2' ? 'n3' : 'n2'), ['y']);
});

test('thesis §4.2.1: a learner receives the log but never votes toward quorum or campaigns; promotion makes it a voter', () => {
  const net = Network.create(3, SCRIPTED_ELECTIONS);
  net.campaign('n1');
  net.addNode('n4', conf3, new MemoryStorage(conf3));
  proposeConf(net, 'n1', { type: 'addLearner', nodeId: 'n4' });
  net.propose('n1', 'a');
  assert.deepEqual(net.appliedData('n4'), ['a']);
  assert.equal(net.node('n1').raw.status().progress!['n4']!.learner, true);
  // the learner's acks do not make a majority
  net.isolate('n2');
  net.isolate('n3');
  net.propose('n1', 'b');
  assert.equal(net.node('n1').raw.status().commit, net.node('n4').raw.status().commit);
  assert.ok(!net.appliedData('n4').includes('b'));
  // a learner never campaigns without Pre-Vote (with it, see learner-newest-log.test.ts)
  net.tick('n4', 100);
  assert.equal(net.node('n4').raw.status().role, 'follower');
  net.recover();
  net.stabilize();
  // promotion = addVoter of the existing learner
  net.run(2);
  proposeConf(net, 'n1', { type: 'addVoter', nodeId: 'n4' });
  assert.deepEqual(net.node('n4').raw.status().conf, { voters: ['n1', 'n2', 'n3', 'n4'], learners: [] });
  assert.equal(net.node('n1').raw.status().progress!['n4']!.learner, false);
  // n4 can now be elected
  net.isolate('n1');
  net.node('n4').raw.campaign();
  net.stabilize();
  assert.equal(net.node('n4').raw.status().role, 'leader');
});

test('thesis §4.1: a conf entry that is truncated (never committed) is reverted', () => {
  const net = Network.create(5, SCRIPTED_ELECTIONS);
  net.campaign('n1');
  // n1 appends "add learner n9"; only n2 gets it, so it cannot commit
  for (const id of ['n3', 'n4', 'n5']) net.cutLink('n1', id);
  assert.equal(net.node('n1').raw.proposeConfChange({ type: 'addLearner', nodeId: 'n9' }).ok, true);
  net.stabilize();
  assert.deepEqual(net.node('n2').raw.status().conf.learners, ['n9'], 'in force as soon as it is appended');
  // n1 dies; n3 wins a new term with n4 and n5 and overwrites index 2 on n2
  net.recover();
  net.isolate('n1');
  net.campaign('n3');
  assert.equal(net.node('n3').raw.status().role, 'leader');
  net.propose('n3', 'x');
  assert.equal(net.logOf('n2')[1], '2/2:noop');
  assert.deepEqual(net.node('n2').raw.status().conf, { voters: ['n1', 'n2', 'n3', 'n4', 'n5'], learners: [] }, 'reverted');
});

test('a removed learner or voter conf is re-applied from the stored log after a restart', () => {
  const net = Network.create(3);
  net.campaign('n1');
  proposeConf(net, 'n1', { type: 'addLearner', nodeId: 'n4' });
  proposeConf(net, 'n1', { type: 'removeNode', nodeId: 'n3' });
  net.restart('n2');
  assert.deepEqual(net.node('n2').raw.status().conf, { voters: ['n1', 'n2'], learners: ['n4'] });
  void enc;
});
