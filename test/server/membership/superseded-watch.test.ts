// The run-time amnesia decision rests on the configuration a node will have once it holds
// its leader's log, not on a snapshot's (docs/membership.md "Incarnations";
// SupersededWatch in src/server/membership/amnesia-check.ts). The trap: n2 is removed, its disk wiped,
// and it is added again under the same id; the leader's newest snapshot was taken before
// the removal and still binds n2 to its old data directory. The fresh n2 installs that
// snapshot first — for a moment its configuration says "n2 is a voter bound elsewhere",
// the core reports 'superseded' — and only then receives the removeNode/addLearner entries
// after it. A node that stopped on the core's word exited as amnesiac (exit 2) while it
// was a legitimate learner. Here on the real Raft core, with the leader's appends held
// back after the snapshot, as long as it takes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeConfChange } from '../../../src/raft/core/conf.js';
import { MemoryStorage } from '../../../src/raft/core/storage.js';
import type { ConfChange, ConfState, Snapshot } from '../../../src/raft/core/types.js';
import { SupersededWatch } from '../../../src/server/membership/amnesia-check.js';
import { Network, enc, type NodeOptions } from '../../raft/harness.js';

const OPTS: NodeOptions = { incarnations: true, preVote: true, checkQuorum: true };
const GRACE_MS = 600;

function proposeConf(net: Network, cc: ConfChange): void {
  assert.equal(net.node('n1').raw.proposeConfChange(cc).ok, true);
  net.stabilize();
}

/** compact n1 at its applied index; the snapshot's conf carries the bootstrap bindings */
function compactLeader(net: Network): Snapshot {
  const n = net.node('n1');
  const idx = n.raw.status().applied;
  const boot = decodeConfChange(n.storage.entries(n.storage.firstIndex(), n.storage.firstIndex() + 1)[0]!.data);
  assert.equal(boot.type, 'bootstrap');
  const conf: ConfState = { voters: n.raw.status().conf.voters, learners: n.raw.status().conf.learners, incarnations: boot.incarnations!, clusterId: boot.clusterId! };
  const snap: Snapshot = { meta: { index: idx, term: n.storage.term(idx)!, conf }, data: enc('app') };
  n.storage.compact(snap);
  return snap;
}

/** n1 leads {n1,n2,n3}; a snapshot binds n2#1; then n2 is removed, wiped and added again
 *  as a learner; it restarts empty (a joiner: no configuration at all) as n2#2 */
function reusedId(): Network {
  const net = Network.create(3, OPTS);
  net.campaign('n1');
  for (let k = 0; k < 3; k++) assert.ok(net.propose('n1', `w${k}`).ok);
  const snap = compactLeader(net);
  assert.equal(snap.meta.conf.incarnations!['n2'], 'n2#1');
  proposeConf(net, { type: 'removeNode', nodeId: 'n2' });
  proposeConf(net, { type: 'addLearner', nodeId: 'n2' });
  net.wipe('n2');
  net.node('n2').storage = new MemoryStorage({ voters: [], learners: [] });
  net.restart('n2');
  return net;
}

test('a reused id: superseded by the snapshot alone, the node is not judged amnesiac, and it goes on as a learner', () => {
  const net = reusedId();
  // the leader's appends to n2 get through until it has sent the snapshot; after that
  // they are held back (a slow link, a leader that dies): n2 sits on the snapshot alone
  let snapSent = false;
  net.drop((m) => {
    if (m.type === 'snapshot' && m.to === 'n2') snapSent = true;
    return snapSent && m.from === 'n1' && m.to === 'n2' && m.type === 'append';
  });
  net.run(3);
  assert.ok(snapSent, 'the leader shipped its (pre-removal) snapshot');
  const st = net.node('n2').raw.status();
  assert.equal(st.standing, 'superseded', 'the trap: on the snapshot alone the core says superseded');
  assert.ok(st.leaderCommit > st.lastIndex, `the leader's appends said more is committed (${st.leaderCommit} > ${st.lastIndex})`);
  const watch = new SupersededWatch(GRACE_MS);
  for (let t = 0; t <= 10 * GRACE_MS; t += 50) assert.equal(watch.observe(net.node('n2').raw.status(), t), false, `not amnesiac at ${t} ms`);
  // the appends arrive: removeNode n2 then addLearner n2 — a learner, bound to nothing
  net.recover();
  net.run(3);
  const after = net.node('n2').raw.status();
  assert.equal(after.standing, 'unbound');
  assert.deepEqual(after.conf.learners, ['n2']);
  assert.equal(watch.observe(after, 11 * GRACE_MS), false);
  // and the leader can promote it: it is then bound to its new data directory
  proposeConf(net, { type: 'addVoter', nodeId: 'n2' });
  assert.equal(net.node('n2').raw.status().standing, 'bound');
});

test('a member that really lost its data is judged amnesiac once it holds the leader\'s log, after the grace', () => {
  const net = Network.create(3, OPTS);
  net.campaign('n1');
  for (let k = 0; k < 3; k++) assert.ok(net.propose('n1', `w${k}`).ok);
  compactLeader(net);
  net.wipe('n2'); // restarted empty under its id, never removed
  net.run(5);
  const st = net.node('n2').raw.status();
  assert.equal(st.standing, 'superseded');
  assert.ok(st.leaderCommit > 0 && st.lastIndex >= st.leaderCommit, 'it holds what the leader has committed');
  const watch = new SupersededWatch(GRACE_MS);
  assert.equal(watch.observe(st, 0), false, 'not at once');
  assert.equal(watch.observe(st, GRACE_MS - 1), false);
  assert.equal(watch.observe(st, GRACE_MS), true, 'amnesiac after the grace');
});
