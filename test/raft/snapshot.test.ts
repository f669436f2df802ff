// Snapshots (Raft §7): a follower that needs compacted entries receives the leader's
// snapshot, installs it through Ready.snapshot, and continues from there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, enc, dec } from './harness.js';
import type { Snapshot } from '../../src/raft/core/types.js';

/** compact a node's storage at its applied index, with the applied data as the "FSM state" */
function compact(net: Network, id: string): Snapshot {
  const n = net.node(id);
  const idx = n.raw.status().applied;
  const snap: Snapshot = {
    meta: { index: idx, term: n.storage.term(idx)!, conf: n.raw.status().conf },
    data: enc(net.appliedData(id).join(',')),
  };
  n.storage.compact(snap);
  return snap;
}

test('§7 the leader sends its snapshot to a follower that needs compacted entries; the follower installs it', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.isolate('n3');
  for (let k = 0; k < 10; k++) net.propose('n1', `v${k}`);
  const snap = compact(net, 'n1');
  compact(net, 'n2');
  assert.equal(net.node('n1').storage.firstIndex(), 12);
  net.recover();
  net.run(3);
  const sent = net.sent.filter((m) => m.type === 'snapshot');
  assert.equal(sent.length, 1, 'one snapshot, not one per heartbeat');
  assert.equal(sent[0]!.to, 'n3');
  const installed = net.node('n3').readies.find((rd) => rd.snapshot);
  assert.ok(installed, 'n3 got a Ready with the snapshot');
  assert.equal(installed.snapshot!.meta.index, snap.meta.index);
  assert.equal(dec(installed.snapshot!.data), 'v0,v1,v2,v3,v4,v5,v6,v7,v8,v9');
  assert.equal(installed.mustSync, true);
  assert.deepEqual(installed.committed, [], 'entries covered by the snapshot are not applied again');
  assert.equal(net.node('n3').storage.snapshot().meta.index, 11);
  // replication continues after the snapshot
  net.propose('n1', 'after');
  assert.deepEqual(net.appliedData('n3'), ['after']);
  assert.equal(net.node('n1').raw.status().progress!['n3']!.state, 'replicate');
  assert.equal(net.node('n3').raw.status().applied, net.node('n1').raw.status().commit);
});

test('§7 reportSnapshot(false) returns the follower to probing and the snapshot is sent again', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.isolate('n3');
  for (let k = 0; k < 3; k++) net.propose('n1', `v${k}`);
  compact(net, 'n1');
  net.recover();
  // run until the leader sends the snapshot, and hold it back (the transport is "sending")
  const held = (): boolean => net.queue.some((m) => m.type === 'snapshot');
  for (let t = 0; t < 5 && !held(); t++) {
    net.tickAll();
    for (const id of net.ids()) net.handleReady(id);
    net.deliver((m) => m.type !== 'snapshot');
    for (const id of net.ids()) net.handleReady(id);
  }
  assert.ok(held());
  assert.equal(net.node('n1').raw.status().progress!['n3']!.state, 'snapshot');
  for (let t = 0; t < 3; t++) {
    net.tickAll();
    for (const id of net.ids()) net.handleReady(id);
    net.deliver((m) => m.type !== 'snapshot');
    for (const id of net.ids()) net.handleReady(id);
  }
  assert.equal(net.node('n1').raw.status().progress!['n3']!.state, 'snapshot', 'no second snapshot while one is in flight');
  // the transport reports that the send failed
  net.queue = net.queue.filter((m) => m.type !== 'snapshot');
  net.node('n1').raw.reportSnapshot('n3', false);
  assert.equal(net.node('n1').raw.status().progress!['n3']!.state, 'probe');
  net.run(3);
  assert.equal(net.sent.filter((m) => m.type === 'snapshot').length, 1, 'sent again and delivered');
  assert.equal(net.node('n3').storage.snapshot().meta.index, 4);
  net.propose('n1', 'z');
  assert.deepEqual(net.appliedData('n3'), ['z']);
});

test('a follower that already has the snapshot\'s entries only learns they are committed', () => {
  const net = Network.create(2);
  net.campaign('n1');
  net.propose('n1', 'a');
  const n2 = net.node('n2');
  const snapIndex = n2.raw.status().lastIndex;
  n2.raw.step({ type: 'snapshot', from: 'n1', to: 'n2', term: 1, snapshot: { meta: { index: snapIndex, term: 1, conf: { voters: ['n1', 'n2'], learners: [] } }, data: new Uint8Array() } });
  assert.equal(n2.raw.hasReady(), true);
  const rd = n2.raw.ready();
  assert.equal(rd.snapshot, undefined, 'no restore: the log already matches');
  n2.raw.advance(rd);
});

test('a restarted node with a compacted log starts from its snapshot', () => {
  const net = Network.create(3);
  net.campaign('n1');
  for (let k = 0; k < 4; k++) net.propose('n1', `v${k}`);
  const snap = compact(net, 'n2');
  net.restart('n2', snap.meta.index);
  assert.equal(net.node('n2').raw.status().applied, snap.meta.index);
  net.propose('n1', 'more');
  assert.deepEqual(net.appliedData('n2'), ['more']);
  // applied below the snapshot is raised to it: the app restored the snapshot
  net.restart('n3', 0);
  compact(net, 'n3');
  net.restart('n3', 0);
  assert.equal(net.node('n3').raw.status().applied, net.node('n3').storage.snapshot().meta.index);
});
