// A follower whose disk lost entries it had acknowledged (docs/raft-core.md "A follower
// whose log went backwards"): killed right after the leader counted its acknowledgement,
// it comes back with a shorter log (a torn last record: a lying or damaged disk). The
// leader holds it as matched up to the old index, so before the fix it kept sending from
// there, took every rejection for a stale one, and the follower stayed behind until the
// leader next compacted — forever on a quiet cluster — while its heartbeat acks still
// counted for ReadIndex rounds. Now the follower answers a heartbeat whose commit index
// its log does not reach with `lost`, and the leader forgets its match, stops counting it
// for reads until it holds those entries again, and sends them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStorage } from '../../src/raft/core/storage.js';
import { Network, type NodeOptions } from './harness.js';

const OPTS: NodeOptions = { incarnations: true, preVote: true, checkQuorum: true };

/** n1 leads {n1,n2,n3}; five writes are committed and acknowledged by everyone */
function cluster(opts: NodeOptions): { net: Network; last: number } {
  const net = Network.create(3, opts);
  net.campaign('n1');
  assert.equal(net.leader(), 'n1');
  for (let k = 0; k < 5; k++) assert.ok(net.propose('n1', `w${k}`).ok);
  net.run(3);
  const last = net.node('n1').storage.lastIndex();
  assert.equal(net.node('n1').raw.status().progress!['n2']!.match, last, 'n2 acknowledged everything');
  return { net, last };
}

/** `id` crashes and its disk keeps only the log up to `keep` (the hard state survives, its
 *  commit index cut to what is left); it restarts on that disk, the same incarnation */
function loseTail(net: Network, id: string, keep: number): void {
  const s = net.node(id).storage;
  const hs = s.hardState();
  net.node(id).storage = MemoryStorage.from({ hardState: { ...hs, commit: Math.min(hs.commit, keep) }, snapshot: s.snapshot(), entries: s.entries(s.firstIndex(), keep + 1) });
  net.restart(id);
}

test('a follower that lost acknowledged entries is noticed, not counted, and brought back up to date on a quiet cluster', () => {
  const seen: string[] = [];
  const { net, last } = cluster({ ...OPTS, onLogRegression: (f, acked, hint) => void seen.push(`${f} acked ${acked} ends at ${hint}`) });
  loseTail(net, 'n2', last - 2);
  assert.equal(net.node('n2').storage.lastIndex(), last - 2);
  // no new writes: only heartbeats flow
  net.run(3);
  assert.deepEqual(seen, [`n2 acked ${last} ends at ${last - 2}`], 'the leader heard that n2 went back');
  assert.equal(net.node('n2').storage.lastIndex(), last, 'n2 holds the entries again');
  net.run(3);
  assert.equal(net.node('n2').raw.status().commit, last);
  const pr = net.node('n1').raw.status().progress!['n2']!;
  assert.equal(pr.match, last);
  assert.equal(pr.recoverTo, undefined, 'no longer recovering');
});

/** `ticks` ticks, each followed by at most `rounds` rounds of delivery: a follower that
 *  rejects the probe at its match gets it again at once, one round trip each, until the
 *  next heartbeat asks (docs/raft-core.md), so the network never settles between ticks */
function runBounded(net: Network, ticks: number, rounds = 20): void {
  for (let k = 0; k < ticks; k++) {
    net.tickAll();
    for (let r = 0; r < rounds; r++) {
      for (const id of net.ids()) while (net.handleReady(id));
      if (net.deliver() === 0) break;
    }
  }
}

test('a follower that lost its whole log, the entry that bound its data directory included, is noticed too (sim seed 7694)', () => {
  // Its log is empty and its configuration the seed's, so its standing reads 'fresh', as a
  // brand-new data directory's would; but the incarnation is the same, and the leader's
  // match for it is this directory's. Before the fix a fresh-looking node never said
  // `lost`: the leader kept probing from the old match, and with another voter superseded
  // the cluster could commit nothing (the simulator's liveness check, seed 7694).
  const seen: string[] = [];
  const { net, last } = cluster({ ...OPTS, onLogRegression: (f, acked, hint) => void seen.push(`${f} acked ${acked} ends at ${hint}`) });
  loseTail(net, 'n2', 0);
  assert.equal(net.node('n2').raw.standing(), 'fresh', 'the lost log leaves it looking like a new data directory');
  // heartbeats alone tell it nothing it could tell from a new directory's: the next write's
  // append, which it rejects, puts the leader in doubt, and its heartbeats then ask
  assert.ok(net.node('n1').raw.propose(new TextEncoder().encode('after')).ok);
  runBounded(net, 3);
  assert.deepEqual(seen, [`n2 acked ${last} ends at 0`], 'the leader heard that n2 went back');
  net.run(3);
  assert.equal(net.node('n2').storage.lastIndex(), last + 1, 'n2 holds the entries again, and the new one');
  assert.equal(net.node('n2').raw.standing(), 'bound');
  assert.equal(net.node('n1').raw.status().progress!['n2']!.match, last + 1);
});

test('mutation check (testOnlyFreshNeverSaysLost): the follower that lost its whole log stays behind', () => {
  const { net, last } = cluster({ ...OPTS, testOnlyFreshNeverSaysLost: true });
  loseTail(net, 'n2', 0);
  assert.ok(net.node('n1').raw.propose(new TextEncoder().encode('after')).ok);
  runBounded(net, 50);
  assert.equal(net.node('n2').storage.lastIndex(), 0, 'stuck: the leader keeps probing from the old match');
  assert.equal(net.node('n1').raw.status().progress!['n2']!.match, last);
});

test("a `lost` answer from another data directory under a member's id counts nothing: the leader drops the old directory's progress first", () => {
  const seen: string[] = [];
  const { net, last } = cluster({ ...OPTS, onLogRegression: (f) => void seen.push(f) });
  const term = net.node('n1').raw.status().term;
  net.node('n1').raw.step({ type: 'appendResp', from: 'n2', to: 'n1', term, index: last, reject: true, hint: 0, hintTerm: 0, lost: true, inc: 'n2#2' });
  net.stabilize();
  assert.deepEqual(seen, [], 'another incarnation: its answer says nothing of the old directory');
  assert.equal(net.node('n1').raw.status().progress!['n2']!.match, 0, "the old directory's match is gone with it");
});

test('while it has not got the entries back, its acks count for no ReadIndex round; they do again once it has', () => {
  const { net, last } = cluster(OPTS);
  net.isolate('n3');
  // n2 can hear heartbeats but gets no appends: it cannot get the entries back yet
  net.drop((m) => m.from === 'n1' && m.to === 'n2' && (m.type === 'append' || m.type === 'snapshot'));
  loseTail(net, 'n2', last - 1);
  net.run(2);
  const pr = net.node('n1').raw.status().progress!['n2']!;
  assert.equal(pr.match, 0, 'its match is forgotten: it counts for no commit');
  assert.equal(pr.recoverTo, last);
  net.node('n1').raw.readIndex(7);
  net.run(5);
  assert.deepEqual(net.node('n1').readStates, [], 'a read at the commit index does not rest on n2, which lost it');
  assert.equal(net.leader(), 'n1', 'n2 still hears the leader: no election');
  net.recover();
  net.isolate('n3');
  net.run(5);
  assert.deepEqual(net.node('n1').readStates.map((r) => r.ctx), [7], 'served once n2 holds the entries again');
  assert.equal(net.node('n2').storage.lastIndex(), last);
});

test('mutation check (testOnlyIgnoreLogRegression): the follower stays behind and its acks keep counting for reads', () => {
  const { net, last } = cluster({ ...OPTS, testOnlyIgnoreLogRegression: true });
  loseTail(net, 'n2', last - 2);
  net.run(50);
  assert.equal(net.node('n2').storage.lastIndex(), last - 2, 'stuck: the leader keeps sending from the old match');
  assert.equal(net.node('n1').raw.status().progress!['n2']!.match, last);
  net.isolate('n3');
  net.node('n1').raw.readIndex(9);
  net.run(5);
  assert.deepEqual(net.node('n1').readStates.map((r) => r.ctx), [9], 'n2 counted for the read although it lost the entries');
});

test('a lost answer about an index the leader never counted is ignored (a fresh progress after a leader change)', () => {
  const { net, last } = cluster(OPTS);
  const before = net.node('n1').raw.status().progress!['n2']!.match;
  net.node('n1').raw.step({ type: 'appendResp', from: 'n2', to: 'n1', term: net.node('n1').raw.status().term, index: last + 5, reject: true, hint: 1, hintTerm: 1, lost: true, inc: 'n2#1' });
  net.stabilize();
  assert.equal(net.node('n1').raw.status().progress!['n2']!.match, before, 'an index above the match is no proof');
});

// Simulator seed 890 (docs/raft-core.md "A follower whose log went backwards"): the entries
// the follower lost were above the leader's commit index — older-term entries, which a
// leader commits only with an entry of its own term — so every heartbeat's commit index
// (min(match, commit)) was within the follower's shortened log and the follower could not
// tell. The leader kept probing at its old match, took each rejection for a stale one,
// and, with the third voter away, nothing committed again.
test('a follower that lost acknowledged entries above the commit index is noticed too (sim seed 890)', () => {
  const seen: string[] = [];
  // one entry per append, so n2 can acknowledge the old term's tail without the noop
  const { net, last: L } = cluster({ ...OPTS, maxMsgBytes: 1, onLogRegression: (f, acked, hint) => void seen.push(`${f} acked ${acked} ends at ${hint}`) });
  const t1 = net.node('n1').raw.status().term;
  // n3 is away for the rest of the test: every commit needs n2
  net.isolate('n3');
  // two entries of term t1 that only n1 stores
  net.drop((m) => m.from === 'n1' && m.to === 'n2' && m.type === 'append' && m.entries.length > 0);
  assert.ok(net.propose('n1', 'x1').ok);
  assert.ok(net.propose('n1', 'x2').ok);
  assert.equal(net.node('n2').storage.lastIndex(), L);
  // n1 restarts and wins term t1+1 with n2's vote; n2 acknowledges the old term's tail
  // (L+1, L+2) but not the new noop (L+3), so nothing can be committed by counting
  net.recover();
  net.isolate('n3');
  net.drop((m) => m.from === 'n1' && m.to === 'n2' && m.type === 'append' && m.entries.some((e) => e.index === L + 3) && net.node('n2').raw.status().lastIndex >= L + 2);
  net.restart('n1');
  // n2's log is shorter, so only n1 can win; the first election may split
  for (let k = 0; k < 100 && net.leaders().length === 0; k++) net.run(1);
  assert.equal(net.leader(), 'n1');
  const st = net.node('n1').raw.status();
  assert.ok(st.term > t1);
  assert.equal(st.progress!['n2']!.match, L + 2, 'n2 acknowledged the old tail');
  assert.equal(st.commit, L, 'the old tail is not committed: the noop is not acknowledged');
  // n2's disk loses what it acknowledged above the commit index
  loseTail(net, 'n2', L);
  net.recover();
  net.isolate('n3');
  // until a heartbeat asks, n1 re-sends its probe at the doubted match on each rejection
  // (etcd-raft's probe does the same), so the network is never quiet within a tick: run
  // each tick for a bounded number of delivery rounds instead of stabilize()
  for (let k = 0; k < 20; k++) {
    net.tickAll();
    for (let round = 0; round < 200; round++) {
      for (const id of net.ids()) while (net.handleReady(id));
      if (net.deliver() === 0) break;
    }
  }
  assert.deepEqual(seen, [`n2 acked ${L + 2} ends at ${L}`], 'the leader heard that n2 went back');
  assert.equal(net.node('n2').storage.lastIndex(), L + 3, 'n2 holds the entries again, and the noop');
  assert.equal(net.node('n1').raw.status().commit, L + 3, 'the noop commits with n2');
  assert.deepEqual(net.appliedData('n2').slice(-2), ['x1', 'x2']);
});
