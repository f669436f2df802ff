import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Message, NodeId } from '../../src/raft/core/types.js';
import { MemoryNetwork, type MemoryTransport } from '../../src/transport/memory-transport.js';
import { hb, waitFor } from './helpers.js';

function attach(net: MemoryNetwork, id: NodeId) {
  const t = net.transport(id);
  const box = { t, inbox: [] as Message[], unreachable: [] as NodeId[], snaps: [] as [NodeId, boolean][] };
  t.onMessage((m) => box.inbox.push(m));
  t.onUnreachable((p) => box.unreachable.push(p));
  t.onSnapshotStatus((p, ok) => box.snaps.push([p, ok]));
  return box;
}

describe('MemoryTransport', () => {
  it('delivers asynchronously, in order, as copies', async () => {
    const net = new MemoryNetwork();
    const a = attach(net, 'a');
    const b = attach(net, 'b');
    const m: Message = { from: 'a', to: 'b', term: 1, type: 'append', prevIndex: 0, prevTerm: 0, commit: 0, entries: [{ index: 1, term: 1, kind: 'normal', data: new Uint8Array([1]) }] };
    a.t.send([m, hb('a', 'b', 1), hb('a', 'b', 2)]);
    assert.equal(b.inbox.length, 0, 'not synchronous');
    if (m.type === 'append') m.entries[0]!.data[0] = 99; // the sender's later change does not travel
    await waitFor(() => b.inbox.length === 3, 'delivery');
    const got = b.inbox[0]!;
    assert.ok(got.type === 'append' && got.entries[0]!.data[0] === 1);
    assert.deepEqual(b.inbox.slice(1).map((x) => (x.type === 'heartbeat' ? x.ctx : -1)), [1, 2]);
    assert.equal(a.inbox.length, 0);
  });

  it('cut, isolate and heal; unreachable and snapshot status are reported', async () => {
    const net = new MemoryNetwork();
    const a = attach(net, 'a');
    const b = attach(net, 'b');
    const c = attach(net, 'c');
    net.cut('a', 'b');
    a.t.send([hb('a', 'b', 1), hb('a', 'c', 1)]);
    b.t.send([hb('b', 'a', 1)]);
    await waitFor(() => c.inbox.length === 1 && a.unreachable.length === 1 && b.unreachable.length === 1, 'cut observed');
    assert.deepEqual([a.unreachable, b.unreachable, a.inbox.length, b.inbox.length], [['b'], ['a'], 0, 0]);
    net.heal('b', 'a');
    net.isolate('c');
    const meta = { index: 1, term: 1, conf: { voters: ['a'], learners: [] } };
    a.t.send([hb('a', 'b', 2), { from: 'a', to: 'c', term: 1, type: 'snapshot', snapshot: { meta, data: new Uint8Array(2) } }]);
    await waitFor(() => b.inbox.length === 1 && a.snaps.length === 1, 'heal + isolate observed');
    assert.deepEqual(a.snaps, [['c', false]]);
    net.heal();
    a.t.send([{ from: 'a', to: 'c', term: 1, type: 'snapshot', snapshot: { meta, data: new Uint8Array(2) } }]);
    await waitFor(() => a.snaps.length === 2 && c.inbox.length === 2, 'snapshot after heal');
    assert.deepEqual(a.snaps[1], ['c', true]);
    assert.ok(net.counts.dropped >= 3);
  });

  it('drops messages in flight when the link is cut or the node closes; respects setPeers', async () => {
    const net = new MemoryNetwork();
    const a = attach(net, 'a');
    const b = attach(net, 'b');
    a.t.send([hb('a', 'b', 1)]);
    net.cut('a', 'b'); // before the setImmediate delivery
    await waitFor(() => net.counts.dropped === 1, 'in-flight drop');
    net.heal();
    a.t.setPeers(new Map([['a', 'mem:a']]));
    a.t.send([hb('a', 'b', 2)]);
    await waitFor(() => a.unreachable.length === 1, 'unknown peer is unreachable');
    await (b.t as MemoryTransport).close();
    a.t.setPeers(new Map([['b', 'mem:b']]));
    a.t.send([hb('a', 'b', 3)]);
    await waitFor(() => a.unreachable.length === 2, 'closed node is unreachable');
    assert.equal(b.inbox.length, 0);
    assert.throws(() => net.transport('a'), /already attached/);
  });
});
