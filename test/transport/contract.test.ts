// One contract, two implementations of the driver's Transport seam (src/raft/seams.ts):
// HttpTransport (msgpack over HTTP, real sockets on 127.0.0.1) and its in-memory twin
// MemoryTransport, over both of its networks (MemoryNetwork, and the simulator's
// SimNetwork with its ticks pumped by a timer). What the driver relies on, and all must do:
//  - send() neither throws nor delivers synchronously; each link delivers in order, every
//    message type arrives equal to what was sent, as a copy (not the sender's object);
//  - flush() may be called at any time, and what send() queued is delivered;
//  - a snapshot message is delivered and its outcome reported to the sender: ok for a
//    reachable peer, failed for one that cannot be reached;
//  - a peer that cannot be reached (cut off, closed) is reported unreachable;
//  - a peer that setPeers no longer lists gets nothing; listed again, it does;
//  - after close(), send() and flush() are harmless.
// Where the twins differ on purpose (MemoryTransport reports an unlisted peer unreachable;
// HttpTransport drops it and counts it; SimNetwork hands the receiver the sender's object,
// uncopied, for the simulator's speed), their own tests say so (memory-transport.test.ts,
// http-transport.test.ts, test/sim/network.test.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Message, NodeId } from '../../src/raft/core/types.js';
import type { Transport } from '../../src/raft/seams.js';
import { seededRng } from '../../src/raft/core/rng.js';
import { MemoryNetwork, MemoryTransport } from '../../src/transport/memory-transport.js';
import { SimNetwork, type NetEvent } from '../sim/network.js';
import type { NetworkOptions } from '../sim/options.js';
import { closeAll, deadPort, hb, startNodes, waitFor } from './helpers.js';

interface Peer {
  id: NodeId;
  t: Transport;
  inbox: Message[];
  unreachable: NodeId[];
  snapshotStatus: [NodeId, boolean][];
}

interface Fixture {
  name: string;
  /** a delivered message is a copy, never the sender's object */
  copies: boolean;
  /** transports for `ids`, each knowing all the others (setPeers) */
  start(ids: NodeId[]): Promise<{ peers: Peer[]; urls: Map<NodeId, string> }>;
  /** from now on `from` cannot reach `to` */
  cut(from: Peer, to: Peer, urls: Map<NodeId, string>): Promise<void>;
  closeAll(peers: Peer[]): Promise<void>;
}

const fixtures: Fixture[] = [
  {
    name: 'MemoryTransport',
    copies: true,
    start(ids) {
      const net = new MemoryNetwork();
      const urls = new Map(ids.map((id) => [id, `mem:${id}`]));
      const peers = ids.map((id) => listening(id, net.transport(id), urls));
      worlds.set(peers[0]!.t, { cut: (a, b) => net.cut(a, b), stop: () => undefined });
      return Promise.resolve({ peers, urls });
    },
    cut: cutInWorld,
    closeAll: (peers) => closeWorld(peers),
  },
  {
    name: 'MemoryTransport over SimNetwork',
    copies: false,
    start(ids) {
      let tick = 0;
      const net = new SimNetwork(FIXED_DELAY, seededRng(1), () => tick);
      const urls = new Map(ids.map((id) => [id, `sim:${id}`]));
      const nodes = new Map<NodeId, TrackedTransport>();
      const peers = ids.map((id) => {
        net.addNode(id);
        const t = new TrackedTransport(id, net, 1);
        nodes.set(id, t);
        return listening(id, t, urls);
      });
      // the simulator's cluster role: a closed transport is a node that is down, and what
      // falls due goes to the transports (test/sim/lock/simulate.ts deliver)
      const liveness = { incarnation: (id: NodeId) => (nodes.get(id)?.isOpen ? 1 : null) };
      const route = (ev: NetEvent) => {
        if (ev.kind === 'message') nodes.get(ev.msg.to)?.deliver(ev.msg);
        else if (ev.kind === 'unreachable') nodes.get(ev.node)?.unreachable(ev.peer);
        else nodes.get(ev.node)?.snapshotStatus(ev.peer, ev.ok);
      };
      const timer = setInterval(() => net.deliverDue(++tick, liveness, route), 1);
      worlds.set(peers[0]!.t, { cut: (a, b) => net.cut(a, b), stop: () => clearInterval(timer) });
      return Promise.resolve({ peers, urls });
    },
    cut: cutInWorld,
    closeAll: (peers) => closeWorld(peers),
  },
  {
    name: 'HttpTransport',
    copies: true,
    async start(ids) {
      const nodes = await startNodes(ids, { unreachableIntervalMs: 50, backoffMinMs: 5, backoffMaxMs: 20, requestTimeoutMs: 1000 });
      return { peers: nodes, urls: new Map(nodes.map((n) => [n.id, n.url])) };
    },
    async cut(from, to, urls) {
      from.t.setPeers(new Map([...urls, [to.id, `http://127.0.0.1:${await deadPort()}`]]));
    },
    closeAll: (peers) => closeAll(peers as Parameters<typeof closeAll>[0]),
  },
];
/** an in-memory fixture's network, by its first transport */
const worlds = new Map<Transport, { cut(from: NodeId, to: NodeId): void; stop(): void }>();

/** an in-memory fixture's peer: `t` recording what it is handed, knowing every url */
function listening(id: NodeId, t: Transport, urls: Map<NodeId, string>): Peer {
  const p: Peer = { id, t, inbox: [], unreachable: [], snapshotStatus: [] };
  t.onMessage((m) => p.inbox.push(m));
  t.onUnreachable((x) => p.unreachable.push(x));
  t.onSnapshotStatus((x, ok) => p.snapshotStatus.push([x, ok]));
  t.setPeers(urls);
  return p;
}

/** an in-memory fixture's cut: its network drops from → to */
function cutInWorld(from: Peer, to: Peer): Promise<void> {
  worlds.get(from.t)!.cut(from.id, to.id);
  return Promise.resolve();
}

async function closeWorld(peers: Peer[]): Promise<void> {
  worlds.get(peers[0]!.t)?.stop();
  worlds.delete(peers[0]!.t);
  await Promise.all(peers.map((p) => p.t.close()));
}

/** the SimNetwork fixture asks whether a node is up (its NodeLiveness) */
class TrackedTransport extends MemoryTransport {
  isOpen = true;
  override close(): Promise<void> {
    this.isOpen = false;
    return super.close();
  }
}

/** fault-free, and one tick per hop for every packet: SimNetwork's random delays reorder a
 *  link, which the simulator wants and the contract's in-order delivery does not allow */
const FIXED_DELAY: NetworkOptions = {
  delayMinTicks: 1, delayMeanTicks: 1, dropProbability: 0, duplicateProbability: 0, reorderProbability: 0, linkCapacity: 64,
  partitionMode: 'none', partitionProbability: 0, unpartitionProbability: 0, partitionStabilityTicks: 0, unpartitionStabilityTicks: 0,
  clogProbability: 0, clogDurationMeanTicks: 10,
};

/** one of every message type, a → b */
function everyType(a: NodeId, b: NodeId): Message[] {
  const conf = { voters: [a, b], learners: [], incarnations: { [a]: 'i-a', [b]: 'i-b' }, clusterId: 'c-1' };
  return [
    { from: a, to: b, term: 3, type: 'vote', lastIndex: 10, lastTerm: 2, bind: 'i-b' },
    { from: a, to: b, term: 3, type: 'preVote', lastIndex: 10, lastTerm: 3, transfer: true },
    { from: a, to: b, term: 3, type: 'voteResp', reject: false },
    { from: a, to: b, term: 3, type: 'preVoteResp', reject: true },
    {
      from: a, to: b, term: 3, type: 'append', prevIndex: 4, prevTerm: 1, commit: 4,
      entries: [{ index: 5, term: 2, kind: 'noop', data: new Uint8Array() }, { index: 6, term: 3, kind: 'normal', data: new Uint8Array([1, 2, 3]) }],
    },
    { from: a, to: b, term: 3, type: 'appendResp', index: 7, reject: true, hint: 2, hintTerm: 1, lost: true },
    { from: a, to: b, term: 3, type: 'heartbeat', commit: 7, ctx: 0, match: 9 },
    { from: a, to: b, term: 3, type: 'heartbeatResp', ctx: 42 },
    { from: a, to: b, term: 3, type: 'timeoutNow' },
    { from: a, to: b, term: 3, type: 'snapshot', snapshot: { meta: { index: 100, term: 2, conf }, data: new Uint8Array([7, 7, 7]) } },
  ];
}

const snapshotMsg = (a: NodeId, b: NodeId): Message => ({ from: a, to: b, term: 2, type: 'snapshot', snapshot: { meta: { index: 9, term: 2, conf: { voters: [a, b], learners: [] } }, data: new Uint8Array([1, 2, 3, 4]) } });
const ctxs = (inbox: Message[]) => inbox.map((m) => (m.type === 'heartbeat' ? m.ctx : -1));

for (const fx of fixtures) {
  describe(`transport contract: ${fx.name}`, () => {
    async function withPeers(ids: NodeId[], body: (p: Peer[], urls: Map<NodeId, string>) => Promise<void>): Promise<void> {
      const { peers, urls } = await fx.start(ids);
      try {
        await body(peers, urls);
      } finally {
        await fx.closeAll(peers);
      }
    }

    it('delivers every message type in order, equal to what was sent, as copies, never inside send()', () =>
      withPeers(['n1', 'n2'], async ([a, b]) => {
        const msgs = everyType(a!.id, b!.id);
        // the snapshot travels on its own path; the rest share one link, in order
        const plain = msgs.filter((m) => m.type !== 'snapshot');
        a!.t.send([...plain, hb(a!.id, b!.id, 1), hb(a!.id, b!.id, 2)]);
        assert.equal(b!.inbox.length, 0, 'nothing is delivered synchronously');
        await waitFor(() => b!.inbox.length === plain.length + 2, 'delivery');
        assert.deepStrictEqual(b!.inbox.slice(0, plain.length), plain);
        assert.deepEqual(ctxs(b!.inbox.slice(plain.length)), [1, 2]);
        if (fx.copies) for (let i = 0; i < plain.length; i++) assert.notEqual(b!.inbox[i], plain[i], 'a copy, not the sender\'s object');
        const snap = msgs.find((m) => m.type === 'snapshot')!;
        a!.t.send([snap]);
        await waitFor(() => b!.inbox.length === plain.length + 3 && a!.snapshotStatus.length === 1, 'snapshot delivery and status');
        assert.deepStrictEqual(b!.inbox.at(-1), snap);
        assert.deepEqual(a!.snapshotStatus, [[b!.id, true]]);
        assert.equal(a!.inbox.length, 0);
      }));

    it('flush() may be called at any time and delivers what send() queued', () =>
      withPeers(['n1', 'n2'], async ([a, b]) => {
        a!.t.flush();
        for (let i = 1; i <= 5; i++) {
          a!.t.send([hb(a!.id, b!.id, i)]);
          a!.t.flush();
        }
        a!.t.flush();
        await waitFor(() => b!.inbox.length === 5, 'delivery after flushes');
        assert.deepEqual(ctxs(b!.inbox), [1, 2, 3, 4, 5]);
      }));

    it('reports a peer it cannot reach, and a failed snapshot to it; others still get theirs', () =>
      withPeers(['n1', 'n2', 'n3'], async ([a, b, c], urls) => {
        await fx.cut(a!, b!, urls);
        a!.t.send([hb(a!.id, b!.id, 1), hb(a!.id, c!.id, 1)]);
        await waitFor(() => a!.unreachable.includes(b!.id) && c!.inbox.length === 1, 'unreachable reported, c served');
        assert.ok(!a!.unreachable.includes(c!.id));
        a!.t.send([snapshotMsg(a!.id, b!.id)]);
        await waitFor(() => a!.snapshotStatus.length === 1, 'snapshot outcome');
        assert.deepEqual(a!.snapshotStatus, [[b!.id, false]]);
        assert.equal(b!.inbox.length, 0);
      }));

    it('reports a closed peer unreachable', () =>
      withPeers(['n1', 'n2'], async ([a, b]) => {
        await b!.t.close();
        a!.t.send([hb(a!.id, b!.id, 1)]);
        await waitFor(() => a!.unreachable.includes(b!.id), 'closed peer unreachable');
        assert.equal(b!.inbox.length, 0);
      }));

    it('sends nothing to a peer setPeers no longer lists; listed again, it is reached', () =>
      withPeers(['n1', 'n2'], async ([a, b], urls) => {
        a!.t.setPeers(new Map([[a!.id, urls.get(a!.id)!]]));
        a!.t.send([hb(a!.id, b!.id, 1)]);
        a!.t.setPeers(urls);
        a!.t.send([hb(a!.id, b!.id, 2)]);
        await waitFor(() => b!.inbox.length >= 1, 'delivery after re-listing');
        assert.deepEqual(ctxs(b!.inbox), [2]);
      }));

    it('after close(), send() and flush() neither throw nor deliver', () =>
      withPeers(['n1', 'n2'], async ([a, b]) => {
        await a!.t.close();
        a!.t.send([hb(a!.id, b!.id, 1), snapshotMsg(a!.id, b!.id)]);
        a!.t.flush();
        await a!.t.close();
        // b still hears from a live sender, and only from it
        b!.t.send([hb(b!.id, a!.id, 1)]);
        await waitFor(() => b!.unreachable.includes(a!.id), 'the closed node is unreachable for b');
        assert.equal(b!.inbox.length, 0);
        assert.equal(a!.inbox.length, 0);
        assert.deepEqual(a!.snapshotStatus, []);
      }));
  });
}
