// Log replication (Raft §5.3, §5.4): Figure 7 repairs, Figure 8 (no commit of an older
// term's entry by counting replicas), flow control and restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, SCRIPTED_ELECTIONS, enc, storageWithTerms } from './harness.js';
import type { ConfState, Message } from '../../src/raft/core/types.js';
import { MAX_ENTRY_BYTES } from '../../src/raft/core/raft.js';

const conf3: ConfState = { voters: ['n1', 'n2', 'n3'], learners: [] };
// Figure 7: the leader's log for term 8, and the followers' logs (a)–(f)
const LEADER = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6];
const FIG7: Record<string, number[]> = {
  a: [1, 1, 1, 4, 4, 5, 5, 6, 6], // missing entries
  b: [1, 1, 1, 4],
  c: [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6], // extra uncommitted entry
  d: [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7], // extra entries of a later term
  e: [1, 1, 1, 4, 4, 4, 4], // missing and extra
  f: [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3], // a leader of terms 2 and 3 that never committed
};

for (const [name, follower] of Object.entries(FIG7)) {
  test(`§5.3 Figure 7 (${name}): the leader repairs the follower's log to match its own`, () => {
    const net = new Network([], {});
    net.addNode('n1', conf3, storageWithTerms(LEADER, conf3, 7));
    net.addNode('n2', conf3, storageWithTerms(follower, conf3, 7));
    net.addNode('n3', conf3, storageWithTerms(LEADER, conf3, 7)); // votes for n1
    net.campaign('n1');
    assert.equal(net.leader(), 'n1');
    assert.equal(net.node('n1').raw.status().term, 8);
    const want = net.logOf('n1');
    assert.equal(want.length, 11, 'leader log + its term-8 noop');
    assert.deepEqual(net.logOf('n2'), want);
    assert.equal(net.node('n2').raw.status().commit, 11);
    // fast back-tracking: a handful of rejections, not one per divergent entry
    const rejects = net.sent.filter((m) => m.type === 'appendResp' && m.from === 'n2' && m.reject).length;
    assert.ok(rejects <= 3, `${rejects} rejections`);
  });
}

test('§5.3 fast back-tracking: a follower far behind with conflicting terms is repaired in O(terms) round trips', () => {
  const longConflict = Array.from({ length: 200 }, (_, k) => (k < 5 ? 1 : 2));
  const leader = Array.from({ length: 200 }, (_, k) => (k < 5 ? 1 : 3));
  const net = new Network([], {});
  net.addNode('n1', conf3, storageWithTerms(leader, conf3, 3));
  net.addNode('n2', conf3, storageWithTerms(longConflict, conf3, 3));
  net.addNode('n3', conf3, storageWithTerms(leader, conf3, 3));
  net.campaign('n1');
  assert.deepEqual(net.logOf('n2'), net.logOf('n1'));
  const rejects = net.sent.filter((m) => m.type === 'appendResp' && m.from === 'n2' && m.reject).length;
  assert.ok(rejects <= 3, `${rejects} rejections for 195 conflicting entries`);
});

test('§5.4.2 Figure 8: a leader never commits an older term\'s entry by counting replicas', () => {
  const net = Network.create(5, { maxMsgBytes: 30, ...SCRIPTED_ELECTIONS }); // one entry per append: we can drop precisely
  // (a) n1 leads term 1 and replicates "x" at index 2 only to n2
  net.campaign('n1');
  for (const id of ['n3', 'n4', 'n5']) net.cutLink('n1', id);
  net.propose('n1', 'x');
  assert.deepEqual(net.logOf('n2'), ['1/1:noop', '2/1:x']);
  assert.equal(net.node('n1').raw.status().commit, 1);
  // (b) n1 crashes; n5 wins term 2 with n3 and n4, and appends "y" that reaches nobody
  net.recover();
  net.restart('n1');
  net.isolate('n1');
  net.drop((m) => m.from === 'n5' && m.type === 'append');
  net.campaign('n5');
  assert.equal(net.node('n5').raw.status().role, 'leader');
  assert.equal(net.node('n5').raw.propose(enc('y')).ok, true);
  net.stabilize();
  // (c) n5 crashes; n1 comes back and leads a later term, replicating its term-1 "x" to n3
  //     and n4 (index 2 is then on n1..n4: a majority) while its own noop at index 3
  //     reaches nobody (it is dropped whenever the follower would accept it)
  net.recover();
  net.restart('n5');
  net.isolate('n5');
  net.drop((m) => m.type === 'append' && m.entries.some((e) => e.index >= 3) && net.logOf(m.to).length >= 2);
  net.campaign('n1');
  if (net.node('n1').raw.status().role !== 'leader') net.campaign('n1'); // first try may hit term 2 voters
  assert.equal(net.node('n1').raw.status().role, 'leader');
  const t = net.node('n1').raw.status().term;
  net.run(3);
  assert.ok(net.logOf('n3').includes('2/1:x'), 'x is on n1, n2 and n3');
  const st = net.node('n1').raw.status();
  assert.equal(st.term, t);
  assert.equal(st.commit, 1, 'x is on a majority but from an older term: not committed');
  assert.equal(st.progress!['n3']!.match, 2);
  assert.equal(st.progress!['n4']!.match, 2);
  // (d) n1 crashes; n5 (last term 2 > 1) wins with n2, n3, n4 and overwrites index 2
  net.recover();
  net.restart('n1');
  net.isolate('n1');
  net.campaign('n5');
  if (net.node('n5').raw.status().role !== 'leader') net.campaign('n5');
  assert.equal(net.node('n5').raw.status().role, 'leader');
  net.run(3);
  for (const id of ['n2', 'n3', 'n4']) {
    assert.equal(net.logOf(id)[1], '2/2:noop', `${id} index 2 overwritten by the term-2 entry`);
    assert.ok(!net.appliedData(id).includes('x'), `${id} never applied x`);
  }
  // the harness checker verified that no two nodes applied different entries at one index
});

test('§5.4.2 with the current-term noop committed, earlier entries commit with it (no stall)', () => {
  const conf: ConfState = conf3;
  const net = new Network([], {});
  net.addNode('n1', conf, storageWithTerms([1, 1, 2], conf, 2));
  net.addNode('n2', conf, storageWithTerms([1, 1], conf, 2));
  net.addNode('n3', conf, storageWithTerms([1], conf, 2));
  net.campaign('n1');
  for (const id of net.ids()) assert.equal(net.node(id).raw.status().commit, 4, id);
  assert.deepEqual(net.node('n3').applied.map((e) => `${e.index}/${e.term}`), ['1/1', '2/1', '3/2', '4/3']);
});

test('the leader counts its own log toward commit only once it is durable (advance)', () => {
  const net = Network.create(3);
  net.campaign('n1');
  const n1 = net.node('n1').raw;
  n1.propose(enc('a'));
  const rd = n1.ready(); // not yet persisted
  assert.equal(rd.entries.length, 1);
  // followers ack while the leader's own write is still in flight: 2 of 3 suffice
  net.queue.push(...rd.earlyMessages);
  net.deliver();
  for (const id of ['n2', 'n3']) net.handleReady(id);
  net.deliver();
  assert.equal(n1.status().commit, 2, 'a majority of followers commits without the leader');
  n1.advance(rd);
  // a single-node leader must wait for its own durability
  const one = Network.create(1);
  one.campaign('n1');
  const solo = one.node('n1').raw;
  solo.propose(enc('b'));
  const rd1 = solo.ready();
  assert.equal(rd1.committed.length, 0, 'not committed before it is persisted');
  one.node('n1').storage.applyBatch(rd1);
  solo.advance(rd1);
  const rd2 = solo.ready();
  assert.deepEqual(rd2.committed.map((e) => e.index), [2]);
  solo.advance(rd2);
});

test('matchIndex comes from acknowledgements, never from what was sent (lost appends are resent)', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.drop((m) => m.type === 'append' && m.to === 'n3');
  for (let k = 0; k < 5; k++) net.node('n1').raw.propose(enc(`v${k}`));
  net.stabilize();
  const pr = net.node('n1').raw.status().progress!['n3']!;
  assert.equal(pr.match, 1, 'n3 acknowledged only the noop');
  net.recover();
  net.run(2); // a heartbeat response reveals the gap
  assert.deepEqual(net.appliedData('n3'), ['v0', 'v1', 'v2', 'v3', 'v4']);
  assert.equal(net.node('n1').raw.status().progress!['n3']!.match, 6);
});

test('flow control: at most maxInflight appends in flight per follower in replicate state', () => {
  const net = Network.create(2, { maxInflight: 3, maxMsgBytes: 30 });
  net.campaign('n1');
  const n1 = net.node('n1').raw;
  // hold every message to n2 in the queue (not delivered, not lost)
  for (let k = 0; k < 10; k++) n1.propose(enc(`p${k}`));
  net.handleReady('n1');
  const appends = net.queue.filter((m) => m.type === 'append' && m.to === 'n2');
  assert.equal(appends.length, 3, 'window of 3 one-entry appends');
  assert.equal(n1.status().progress!['n2']!.state, 'replicate');
  net.stabilize(); // acks open the window again, until everything is replicated
  assert.equal(net.appliedData('n2').length, 10);
  const maxInFlight = maxOutstanding(net.sent, 'n1', 'n2');
  assert.ok(maxInFlight <= 3, `never more than 3 outstanding, saw ${maxInFlight}`);
});

/** replay the delivered messages and compute the most appends n1→n2 outstanding at once */
function maxOutstanding(sent: readonly Message[], from: string, to: string): number {
  let out = 0;
  let max = 0;
  for (const m of sent) {
    if (m.type === 'append' && m.from === from && m.to === to && m.entries.length > 0) max = Math.max(max, ++out);
    if (m.type === 'appendResp' && m.from === to && m.to === from) out = 0; // acks are cumulative
  }
  return max;
}

test('maxMsgBytes: entries are batched per message under the limit, at least one entry each', () => {
  const net = Network.create(2, { maxMsgBytes: 100 });
  net.campaign('n1');
  net.cutLink('n1', 'n2');
  // 10 entries of 30 data bytes (+24 framing each = 54): two fit under 100 bytes... one does
  for (let k = 0; k < 10; k++) net.node('n1').raw.propose(enc(String(k).repeat(30)));
  net.stabilize();
  net.recover();
  net.run(2);
  assert.equal(net.appliedData('n2').length, 10);
  const sizes = net.sent.filter((m) => m.type === 'append' && m.from === 'n1' && m.entries.length > 0).map((m) => (m.type === 'append' ? m.entries.reduce((s, e) => s + e.data.length + 24, 0) : 0));
  assert.ok(sizes.every((s) => s <= 100), `every append within 100 bytes: ${sizes}`);
  // a single entry larger than the limit still goes (alone)
  const big = Network.create(2, { maxMsgBytes: 40 });
  big.campaign('n1');
  assert.equal(big.propose('n1', 'x'.repeat(40)).ok, true);
  assert.deepEqual(big.appliedData('n2'), ['x'.repeat(40)]);
  assert.equal(big.propose('n1', 'y'.repeat(200)).ok, true, 'entries above maxMsgBytes still go, alone');
  assert.deepEqual(big.appliedData('n2'), ['x'.repeat(40), 'y'.repeat(200)]);
  assert.deepEqual(big.node('n1').raw.propose(new Uint8Array(MAX_ENTRY_BYTES + 1)), { ok: false, reason: 'too_large' });
});

test('batching: proposals between two Ready iterations go out as one append per follower', () => {
  const net = Network.create(3);
  net.campaign('n1');
  for (let k = 0; k < 20; k++) net.node('n1').raw.propose(enc(`b${k}`));
  net.handleReady('n1');
  const appends = net.queue.filter((m) => m.type === 'append');
  assert.equal(appends.length, 2);
  for (const m of appends) assert.equal(m.type === 'append' && m.entries.length, 20);
  net.stabilize();
  assert.equal(net.appliedData('n3').length, 20);
});

test('restart: a node rebuilt from storage keeps term/vote/commit and re-delivers committed entries after `applied`', () => {
  const net = Network.create(3);
  net.campaign('n1');
  for (const v of ['a', 'b', 'c']) net.propose('n1', v);
  const before = net.node('n2').raw.status();
  net.restart('n2', 2); // the app had applied through index 2 ("a")
  const after = net.node('n2').raw.status();
  assert.equal(after.term, before.term);
  assert.equal(after.vote, before.vote);
  assert.equal(after.commit, before.commit);
  assert.equal(after.applied, 2);
  net.stabilize();
  assert.deepEqual(net.appliedData('n2'), ['b', 'c']);
  net.restart('n3'); // default applied = 0: everything committed is handed out again
  net.stabilize();
  assert.deepEqual(net.appliedData('n3'), ['a', 'b', 'c']);
  net.propose('n1', 'd');
  for (const id of net.ids()) assert.equal(net.appliedData(id).at(-1), 'd');
});

test('a follower rejects an append whose prevIndex is far beyond its log, and the leader recovers', () => {
  const net = Network.create(3);
  net.campaign('n1');
  const n2 = net.node('n2').raw;
  n2.step({ type: 'append', from: 'n1', to: 'n2', term: 1, prevIndex: 1_000_000, prevTerm: 1, entries: [], commit: 1_000_000 });
  net.handleReady('n2');
  const resp = net.queue.find((m) => m.from === 'n2' && m.type === 'appendResp');
  assert.ok(resp && resp.type === 'appendResp' && resp.reject && resp.index === 1_000_000 && resp.hint === 1);
  net.stabilize();
  net.propose('n1', 'ok');
  assert.deepEqual(net.appliedData('n2'), ['ok']);
});

test('lazyCommit: followers learn a commit with the next append or heartbeat, never by a commit-only append', () => {
  for (const lazy of [false, true]) {
    const net = Network.create(3, { lazyCommit: lazy });
    net.campaign('n1');
    net.stabilize();
    const before = net.sent.length;
    const x = net.propose('n1', 'x');
    assert.ok(x.ok);
    net.stabilize();
    assert.equal(net.node('n1').raw.status().commit, x.index, 'the leader commits either way');
    const commitOnly = net.sent.slice(before).filter((m) => m.type === 'append' && m.entries.length === 0);
    const followerCommit = net.node('n2').raw.status().commit;
    if (!lazy) {
      assert.equal(commitOnly.length, 2, 'eager: one commit-only append per follower');
      assert.equal(followerCommit, x.index);
      continue;
    }
    assert.equal(commitOnly.length, 0, 'lazy: no commit-only appends');
    assert.equal(followerCommit, x.index - 1, 'the follower has not heard of the commit yet');
    // the next proposal's append carries it
    const y = net.propose('n1', 'y');
    assert.ok(y.ok);
    net.deliver((m) => m.type === 'append');
    assert.equal(net.node('n2').raw.status().commit, x.index);
    net.stabilize();
    // and a heartbeat carries the rest
    net.tick('n1');
    net.stabilize();
    for (const id of ['n2', 'n3']) assert.equal(net.node(id).raw.status().commit, y.index, `${id} learns the last commit from the heartbeat`);
    assert.deepEqual(net.appliedData('n3'), net.appliedData('n1'));
  }
});
