// Directed schedules on the simulator's cluster, for situations random schedules reach too
// rarely. Figure 8 of the Raft paper (§5.4.2): a leader must not commit an entry of an
// older term by counting replicas, because a node holding a newer-term entry at that index
// can still be elected and overwrite it. Here the old-term entry reaches a majority, the
// leader is cut off before its own term's entry does, and the other node is elected. With
// a correct core nothing was committed, so the overwrite is legal; a core that commits by
// counting applies the entry first, and LeaderCompleteness fires.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimCluster } from './cluster.js';
import { drawOptions, subsystemRngs, type SimOptions } from '../options.js';
import type { SimNode } from './driver.js';

/** a quiet 5-node cluster: 1-tick links, no faults, no spontaneous elections */
function quietCluster(): SimCluster {
  const base = drawOptions(8);
  const opts: SimOptions = {
    ...base, nodeCount: 5, electionTicks: 1000, heartbeatTicks: 1, preVote: false, checkQuorum: false,
    maxInflight: 8, maxMsgBytes: 1, // one entry per append: the old entry and the new term's travel apart
    // elections are started by hand the moment a leader is gone, so the leader lease (which
    // needs an election timeout to pass) holds only with Check-Quorum, as in
    // test/raft/harness.ts SCRIPTED_ELECTIONS (docs/raft-core.md "The leader lease")
    mutations: ['lease-only-with-checkquorum'],
    network: { ...base.network, delayMinTicks: 1, delayMeanTicks: 1, dropProbability: 0, duplicateProbability: 0, reorderProbability: 0,
      linkCapacity: 256, partitionMode: 'none', partitionProbability: 0, clogProbability: 0 },
  };
  const r = subsystemRngs(8);
  return new SimCluster(opts, { core: r.core, disk: r.disk, net: r.network });
}

function tick(c: SimCluster, n = 1): void {
  for (let k = 0; k < n; k++) {
    c.beginTick();
    c.endTick();
  }
}

function until(c: SimCluster, what: string, pred: () => boolean, max = 50): void {
  for (let k = 0; k < max; k++) {
    if (pred()) return;
    tick(c);
  }
  assert.fail(`not reached in ${max} ticks: ${what}`);
}

const node = (c: SimCluster, id: string): SimNode => c.node(id) ?? assert.fail(`${id} is not running`);
const status = (c: SimCluster, id: string) => node(c, id).raw.status();

/** campaign until elected; a vote that cannot be decided (a voter is cut off) is retried
 *  in the next term, as an election timeout would */
function elect(c: SimCluster, id: string): void {
  for (let attempt = 0; attempt < 5 && status(c, id).role !== 'leader'; attempt++) {
    node(c, id).raw.campaign();
    for (let k = 0; k < 6 && status(c, id).role !== 'leader'; k++) tick(c);
  }
  assert.equal(status(c, id).role, 'leader', `${id} should lead`);
}

function restart(c: SimCluster, id: string): void {
  c.crash(id, 1);
  until(c, `${id} restarts`, () => c.node(id) !== undefined);
}

/** connect exactly the given undirected links; every other link is cut */
function links(c: SimCluster, pairs: string[]): void {
  c.network.recover(c.now);
  const ok = new Set(pairs.flatMap((p) => [p, [...p].reverse().join('')]));
  for (let a = 1; a <= 5; a++) for (let b = 1; b <= 5; b++) if (a !== b && !ok.has(`${a}${b}`)) c.network.cut(`n${a}`, `n${b}`);
}

test('Figure 8: an old-term entry on a majority is not committed by counting; a newer candidate may overwrite it', () => {
  const c = quietCluster();
  const all = ['12', '13', '14', '15', '23', '24', '25', '34', '35', '45'];
  elect(c, 'n1');
  assert.ok(node(c, 'n1').raw.propose(new Uint8Array([1, 1, 1, 1])).ok);
  tick(c, 6);
  const k = status(c, 'n1').commit;
  assert.ok(['n2', 'n3', 'n4', 'n5'].every((id) => node(c, id).app.state.applied === k), 'everyone applied the first write');

  // (a) n1 replicates X (term 1) to n2 only
  links(c, ['12']);
  const x = node(c, 'n1').raw.propose(new Uint8Array([2, 2, 2, 2]));
  assert.ok(x.ok && x.index === k + 1);
  until(c, 'n2 holds X', () => node(c, 'n2').disk.lastIndex() === k + 1);

  // (b) n5 is elected by n3, n4 (term 2) and cut off at once: its entry (k+1, term 2) stays local
  links(c, ['35', '45']);
  elect(c, 'n5');
  links(c, []);
  tick(c, 3);
  assert.equal(node(c, 'n5').disk.term(k + 1), 2, 'n5 holds its own term-2 entry at k+1');

  // (c) n1 restarts and is elected (term 3) by n2, n3, n4; X reaches n3 before n1's noop does
  restart(c, 'n1');
  links(c, ['12', '13', '14']);
  elect(c, 'n1');
  const term = status(c, 'n1').term;
  until(c, "n1 sees n3's ack of X", () => (status(c, 'n1').progress?.['n3']?.match ?? 0) >= k + 1);
  const committedX = node(c, 'n1').app.state.applied >= k + 1;
  const noopOnN3 = node(c, 'n3').disk.lastIndex() >= k + 2;
  links(c, []); // n1 is cut off before its term's entry reaches a majority
  assert.equal(noopOnN3, false, `n3 already holds n1's term-${term} entry: the scenario did not arise`);

  // (d) n5 restarts and is elected by n3, n4 (its last term 2 beats their last term 1)
  restart(c, 'n5');
  links(c, ['35', '45', '25']);
  elect(c, 'n5'); // a core that committed X by counting fails LeaderCompleteness right here
  tick(c, 10);
  assert.equal(committedX, false, 'X (an older-term entry) was committed by counting replicas');
  assert.equal(node(c, 'n3').disk.term(k + 1), 2, 'X was overwritten on n3 by the newer leader, as Figure 8 (d) allows');

  // and the cluster heals: n5's log wins everywhere, everyone converges
  links(c, all);
  until(c, 'everyone applies the same log', () => ['n1', 'n2', 'n3', 'n4', 'n5'].every((id) => c.node(id)?.app.state.applied === status(c, 'n5').commit), 100);
  assert.equal(node(c, 'n1').disk.term(k + 1), 2);
});
