// Leader election (Raft §5.2, §5.4.1) and durability of votes (§5.2 "persistent state").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, storageWithTerms } from './harness.js';
import { RawNode } from '../../src/raft/core/raw-node.js';
import { MemoryStorage } from '../../src/raft/core/storage.js';
import { seededRng } from '../../src/raft/core/rng.js';
import { RaftConfigError } from '../../src/raft/core/raft.js';
import type { Message } from '../../src/raft/core/types.js';

test('§5.2 a follower whose election timeout passes wins with a majority and starts a term', () => {
  const net = Network.create(3);
  // nobody campaigns before the minimum timeout (electionTicks = 10)
  net.run(9);
  assert.deepEqual(net.leaders(), []);
  net.run(20);
  const leader = net.leader();
  const st = net.node(leader).raw.status();
  assert.equal(st.term, 1);
  for (const id of net.ids()) {
    assert.equal(net.node(id).raw.status().leader, leader, `${id} knows the leader`);
    assert.equal(net.node(id).raw.status().term, 1);
  }
  // §5.4.2: the new leader's noop commits everywhere
  assert.deepEqual(net.logOf('n1'), ['1/1:noop']);
});

test('§5.2 randomized election timeouts are drawn from [electionTicks, 2*electionTicks) and reproducible', () => {
  const firstCampaignTick = (seed: number): number => {
    const node = new RawNode({ id: 'a', electionTicks: 10, heartbeatTicks: 1, rng: seededRng(seed), preVote: false, checkQuorum: false, maxInflight: 8, maxMsgBytes: 1024 }, new MemoryStorage({ voters: ['a', 'b', 'c'], learners: [] }));
    for (let t = 1; t < 100; t++) {
      node.tick();
      if (node.status().role === 'candidate') return t;
    }
    return -1;
  };
  const ticks = Array.from({ length: 50 }, (_, s) => firstCampaignTick(s));
  assert.ok(ticks.every((t) => t >= 10 && t < 20), `all in range: ${ticks}`);
  assert.ok(new Set(ticks).size > 3, 'timeouts differ between seeds');
  assert.deepEqual(ticks, Array.from({ length: 50 }, (_, s) => firstCampaignTick(s)), 'same seed, same timeout');
});

test('§5.2 a single-node cluster elects itself and commits alone', () => {
  const net = Network.create(1);
  net.campaign('n1');
  assert.equal(net.leader(), 'n1');
  net.propose('n1', 'a');
  assert.deepEqual(net.appliedData('n1'), ['a']);
});

test('§5.2 a candidate that hears from a leader of its term steps down; a split vote is retried', () => {
  const net = Network.create(3);
  // n1 and n2 campaign at the same time for term 1; n3 votes for whoever asks first
  net.node('n1').raw.campaign();
  net.node('n2').raw.campaign();
  net.stabilize();
  const leaders = net.leaders();
  assert.equal(leaders.length, 1, 'exactly one wins term 1');
  // with n3 cut off, n1 and n2 split their votes forever unless timeouts differ
  const net2 = Network.create(4, { seed: 7 });
  net2.isolate('n4');
  net2.node('n1').raw.campaign();
  net2.node('n2').raw.campaign();
  net2.stabilize(); // n3 votes for one: 2 of 4 is no majority
  assert.deepEqual(net2.leaders(), []);
  net2.run(60); // randomized timeouts break the tie
  assert.equal(net2.leaders().length, 1);
});

test('§5.4.1 the up-to-date check compares the last TERM before the last index', () => {
  // n1 has a longer log of older terms; n2 a shorter log with a newer last term
  const conf = { voters: ['n1', 'n2', 'n3'], learners: [] };
  const net = new Network([], {});
  net.addNode('n1', conf, storageWithTerms([1, 1, 1, 1, 1], conf, 3));
  net.addNode('n2', conf, storageWithTerms([1, 2], conf, 3));
  net.addNode('n3', conf, storageWithTerms([1, 2], conf, 3));
  net.node('n1').raw.campaign();
  net.stabilize();
  assert.notEqual(net.node('n1').raw.status().role, 'leader', 'longer but older log loses');
  net.node('n2').raw.campaign();
  net.stabilize();
  assert.equal(net.leader(), 'n2');
  // n1's extra term-1 entries are overwritten by the leader's log
  assert.deepEqual(net.logOf('n1').map((e) => e.split(':')[0]), ['1/1', '2/2', '3/5']);
});

test('§5.2 a vote survives a crash: after restart the node refuses a second candidate in the same term', () => {
  const net = Network.create(3);
  net.node('n1').raw.campaign();
  net.handleReady('n1'); // persist term 1 + vote for self, send vote requests
  net.deliver((m) => m.to === 'n2'); // only n2 hears n1
  net.handleReady('n2'); // n2 persists its vote for n1, then sends the grant
  assert.deepEqual(net.node('n2').storage.hardState(), { term: 1, vote: 'n1', commit: 0 });
  // n2 crashes before its grant arrives; the grant is lost
  net.restart('n2');
  assert.equal(net.node('n2').raw.status().vote, 'n1');
  assert.equal(net.node('n2').raw.status().term, 1);
  // n3 campaigns for the same term 1 and asks n2
  net.queue = [];
  net.node('n3').raw.campaign();
  net.handleReady('n3');
  const toN2 = net.queue.filter((m) => m.to === 'n2');
  assert.equal(toN2.length, 1);
  assert.equal(toN2[0]!.term, 1);
  net.deliver((m) => m.to === 'n2');
  net.handleReady('n2');
  const resp = net.queue.find((m) => m.from === 'n2' && m.to === 'n3') as Extract<Message, { type: 'voteResp' | 'preVoteResp' }>;
  assert.equal(resp.type, 'voteResp');
  assert.equal(resp.reject, true, 'one vote per term, even across a restart');
});

test('votes and vote responses leave only after the hard state is persisted (messages, never earlyMessages)', () => {
  const net = Network.create(3, { preVote: true });
  net.campaign('n1');
  net.propose('n1', 'x');
  for (const id of net.ids()) {
    for (const rd of net.node(id).readies) {
      for (const m of rd.earlyMessages) assert.ok(['append', 'heartbeat', 'snapshot', 'timeoutNow'].includes(m.type), `${id} early ${m.type}`);
      for (const m of rd.messages) if (m.type === 'vote' || m.type === 'voteResp') assert.equal(rd.mustSync, true);
    }
  }
  // the new leader's first appends go out with its term already durable
  const leaderReadies = net.node('n1').readies;
  const firstAppendReady = leaderReadies.find((rd) => [...rd.earlyMessages, ...rd.messages].some((m) => m.type === 'append'))!;
  assert.ok(firstAppendReady.earlyMessages.some((m) => m.type === 'append'), 'appends in a durable term are early messages');
});

test('a node that is not a voter never campaigns; a node with no conf at all never campaigns', () => {
  const learner = new RawNode({ id: 'l', electionTicks: 5, heartbeatTicks: 1, rng: seededRng(1), preVote: false, checkQuorum: false, maxInflight: 8, maxMsgBytes: 1024 }, new MemoryStorage({ voters: ['a'], learners: ['l'] }));
  const stranger = new RawNode({ id: 's', electionTicks: 5, heartbeatTicks: 1, rng: seededRng(1), preVote: false, checkQuorum: false, maxInflight: 8, maxMsgBytes: 1024 }, new MemoryStorage());
  for (let t = 0; t < 100; t++) {
    learner.tick();
    stranger.tick();
  }
  learner.campaign();
  stranger.campaign();
  assert.equal(learner.status().role, 'follower');
  assert.equal(learner.status().term, 0);
  assert.equal(stranger.status().role, 'follower');
  assert.equal(learner.hasReady(), false);
});

test('RaftConfig is validated with a clear error', () => {
  const base = { id: 'a', electionTicks: 10, heartbeatTicks: 1, rng: seededRng(1), preVote: false, checkQuorum: false, maxInflight: 8, maxMsgBytes: 1024 };
  const bad: [Partial<typeof base>, RegExp][] = [
    [{ id: '' }, /id/],
    [{ electionTicks: 0 }, /electionTicks/],
    [{ heartbeatTicks: 10 }, /heartbeatTicks/],
    [{ maxInflight: 0 }, /maxInflight/],
    [{ maxMsgBytes: 1.5 }, /maxMsgBytes/],
  ];
  for (const [patch, re] of bad) {
    assert.throws(() => new RawNode({ ...base, ...patch }, new MemoryStorage()), (e: unknown) => e instanceof RaftConfigError && re.test(e.message));
  }
});

test('step ignores messages for other nodes, from itself, and garbled ones, without throwing', () => {
  const net = Network.create(3);
  net.campaign('n1');
  const n2 = net.node('n2').raw;
  const before = JSON.stringify(n2.status());
  const garbage: unknown[] = [
    { type: 'append', from: 'n1', to: 'n9', term: 1, prevIndex: 0, prevTerm: 0, entries: [], commit: 0 },
    { type: 'append', from: 'n2', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [], commit: 0 },
    { type: 'append', from: 'n1', to: 'n2', term: -1, prevIndex: 0, prevTerm: 0, entries: [], commit: 0 },
    { type: 'append', from: 'n1', to: 'n2', term: 1, prevIndex: 1, prevTerm: 1, entries: [{ index: 7, term: 1, kind: 'normal', data: new Uint8Array() }], commit: 0 },
    { type: 'append', from: 'n1', to: 'n2', term: 1, prevIndex: 1, prevTerm: 1, entries: [{ index: 2, term: 1, kind: 'conf', data: new Uint8Array([1, 2]) }], commit: 0 },
    { type: 'append', from: 'n1', to: 'n2', term: 1, prevIndex: 1, prevTerm: 1, entries: [{ index: 2, term: 5, kind: 'normal', data: new Uint8Array() }], commit: 0 },
    { type: 'append', from: 'n1', to: 'n2', term: 1, prevIndex: 'x', prevTerm: 1, entries: [], commit: 0 },
    { type: 'snapshot', from: 'n1', to: 'n2', term: 1, snapshot: { meta: { index: 'x' } } },
    { type: 'vote', from: 'n3', to: 'n2', term: 1, lastIndex: -4, lastTerm: 0 },
    { type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 10 ** 9, ctx: 0 },
  ];
  for (const m of garbage) n2.step(m as Message);
  const after = JSON.parse(JSON.stringify(n2.status()));
  assert.deepEqual({ ...after, commit: 0 }, { ...JSON.parse(before), commit: 0 });
  assert.equal(after.commit, 1, 'an absurd heartbeat commit is not applied');
  net.stabilize();
  net.propose('n1', 'still fine');
  assert.deepEqual(net.appliedData('n2'), ['still fine']);
});
