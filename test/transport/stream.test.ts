// The message stream (POST /raft/v1/stream): the incremental frame parser against arbitrary
// chunk boundaries, the receiver's verdicts on good and bad streams, and the sender's
// rotation, idle close, reconnect, backpressure, fallback and prompt close.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createServer, type Socket } from 'node:net';
import fc from 'fast-check';
import type { Message } from '../../src/raft/core/types.js';
import { HttpTransport } from '../../src/transport/http-transport.js';
import { decodeEnvelope, WIRE_VERSION } from '../../src/transport/codec.js';
import { FrameParser, encodeStreamFrame } from '../../src/transport/stream-frames.js';
import { MESSAGES_PATH } from '../../src/transport/peer-server.js';
import { seedFor } from './arbitraries.js';
import { captureLogger, closeAll, hb, startNodes, waitFor, type Node } from './helpers.js';
import { frameOf, rawStream, splitAt } from './stream-helpers.js';

const ctxs = (inbox: Message[]): number[] => inbox.map((m) => (m.type === 'heartbeat' ? m.ctx : -1));
const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);
const append = (i: number, data: Uint8Array): Message => ({ from: 'n1', to: 'n2', term: 1, type: 'append', prevIndex: i, prevTerm: 1, commit: 0, entries: [{ index: i + 1, term: 1, kind: 'normal', data }] });

/** a TCP server that accepts connections and never reads from them */
async function stalledServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const srv = createServer((s) => {
    s.pause();
    s.on('error', () => undefined);
    sockets.push(s);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as { port: number }).port,
    close: async () => {
      // stop accepting first, then drop what was accepted (a paused socket never notices
      // that its peer went away, and would keep the server open)
      const closed = new Promise((r) => srv.close(r));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

describe('FrameParser', () => {
  it('yields the same frames and tags, in order, whatever the chunk boundaries', () => {
    const seed = seedFor('stream frames over arbitrary chunks');
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 40 }), fc.constantFrom(0, 16), (frames, cuts, tagBytes) => {
        const tags = frames.map((_, i) => new Uint8Array(tagBytes).fill(i + 1));
        const wire = Buffer.concat(frames.map((f, i) => encodeStreamFrame(f, tagBytes ? tags[i] : undefined)));
        const budget = { left: 1 << 20 };
        const parser = new FrameParser({ maxFrameBytes: 300, tagBytes, budget });
        const got: [Uint8Array, Uint8Array][] = [];
        for (const piece of splitAt(wire, cuts.map((c) => c % (wire.length + 1)))) {
          const f = parser.push(Buffer.from(piece), (frame, tag) => {
            got.push([Uint8Array.from(frame), Uint8Array.from(tag)]);
            return null;
          });
          assert.equal(f, null);
          assert.ok(budget.left <= 1 << 20 && budget.left >= (1 << 20) - 316, 'at most one partial frame is charged');
        }
        assert.equal(parser.end(), null);
        assert.deepEqual(got.map((g) => g[0]), frames);
        assert.deepEqual(got.map((g) => g[1]), tagBytes ? tags : frames.map(() => new Uint8Array()));
        assert.equal(budget.left, 1 << 20, 'the budget is given back');
      }),
      { seed, numRuns: 500 },
    );
  });

  it('many frames in one chunk; a body that ends inside a frame is malformed', () => {
    const frames = range(0, 1000).map((i) => new Uint8Array([i & 0xff, 7]));
    const wire = Buffer.concat(frames.map((f) => encodeStreamFrame(f)));
    const parser = new FrameParser({ maxFrameBytes: 10, tagBytes: 0, budget: { left: 100 } });
    let n = 0;
    assert.equal(parser.push(wire, (f) => (assert.equal(f[0], n++ & 0xff), null)), null);
    assert.equal(n, 1000);
    assert.equal(parser.push(wire.subarray(0, 5), () => null), null);
    assert.equal(parser.midFrame, true);
    assert.deepEqual(parser.end(), { status: 400, reason: 'malformed', detail: 'stream ended inside a frame' });
  });

  it('refuses a frame over the limit from its length alone, and a partial frame over the budget', () => {
    const p1 = new FrameParser({ maxFrameBytes: 1000, tagBytes: 16, budget: { left: 1 << 20 } });
    const header = Buffer.alloc(4);
    header.writeUInt32BE(1001);
    assert.equal(p1.push(header, () => null)?.status, 413);
    const budget = { left: 150 };
    const p2 = new FrameParser({ maxFrameBytes: 1000, tagBytes: 0, budget });
    const frame = encodeStreamFrame(new Uint8Array(200));
    assert.equal(p2.push(frame.subarray(0, 100), () => null), null);
    assert.equal(budget.left, 54, 'the partial frame is charged');
    assert.equal(p2.push(frame.subarray(100), () => null)?.reason, 'busy');
    assert.equal(budget.left, 150, 'and given back when the stream fails');
  });
});

describe('stream receiver', () => {
  it('delivers many frames sent in one chunk and frames split over many chunks, in order; answers 204 at the end', async () => {
    const nodes = await startNodes(['n1', 'n2']);
    const b = nodes[1]!;
    try {
      const wire = Buffer.concat(range(0, 200).map((i) => frameOf([hb('n1', 'n2', i)])));
      assert.equal(await rawStream(b.url, [wire]), 204);
      assert.deepEqual(ctxs(b.inbox), range(0, 200));
      const wire2 = Buffer.concat(range(200, 100).map((i) => frameOf([hb('n1', 'n2', i), hb('n1', 'n2', i + 1000)])));
      assert.equal(await rawStream(b.url, splitAt(wire2, range(1, 400).map((i) => i * 7))), 204);
      assert.equal(b.inbox.length, 400);
      assert.deepEqual(ctxs(b.inbox.slice(200)), range(200, 100).flatMap((i) => [i, i + 1000]));
      assert.equal(b.t.stats().received, 400);
      assert.deepEqual(b.t.stats().rejected, {});
    } finally {
      await closeAll(nodes);
    }
  });

  it('a bad frame ends the stream with the status of the POST route, is counted, and closes the connection', async () => {
    const nodes = await startNodes(['n1', 'n2'], { maxBodyBytes: 64 * 1024 });
    const b = nodes[1]!;
    try {
      const good = (i: number): Buffer => frameOf([hb('n1', 'n2', i)]);
      const tooLong = Buffer.alloc(4);
      tooLong.writeUInt32BE(64 * 1024 + 1);
      const cases: [string, Uint8Array, number, string][] = [
        ['undecodable msgpack', encodeStreamFrame(new Uint8Array([WIRE_VERSION, 0xc1])), 400, 'malformed'],
        ['wrong version', encodeStreamFrame(new Uint8Array([9, 0x80])), 400, 'version'],
        ['another cluster', frameOf([hb('n1', 'n2', 1)], undefined, 'other'), 403, 'cluster'],
        ['bad field', frameOf([{ ...hb('n1', 'n2', 1), term: -1 }]), 400, 'bad_field'],
        ['over the frame limit (length only)', tooLong, 413, 'too_large'],
        ['ends inside a frame', good(5).subarray(0, 9), 400, 'malformed'],
      ];
      let delivered = 0;
      for (const [name, bad, status, reason] of cases) {
        const before = b.t.stats().rejected[reason as keyof ReturnType<typeof b.t.stats>['rejected']] ?? 0;
        // two good frames, then the bad one
        assert.equal(await rawStream(b.url, [good(delivered), good(delivered + 1), bad]), status, name);
        delivered += 2;
        assert.equal(b.inbox.length, delivered, `${name}: the frames before the bad one were delivered`);
        assert.equal(b.t.stats().rejected[reason as 'malformed'], before + 1, `${name}: counted under ${reason}`);
      }
      // a frame over the limit refused while the rest of it is still coming: the receiver
      // does not wait for the body (the connection is closed under the sender)
      const started = Date.now();
      const huge = encodeStreamFrame(new Uint8Array(200_000));
      const status = await rawStream(b.url, splitAt(huge, range(1, 50).map((i) => i * 4000)));
      assert.ok(status === 413 || status === 0, `status ${status}`);
      assert.ok(Date.now() - started < 5_000);
      // refusals are logged at most once a minute per address
      assert.equal(b.log.lines.filter((l) => l.msg === 'peer request rejected').length, 1);
      // and a good stream still works afterwards
      assert.equal(await rawStream(b.url, [good(100)]), 204);
      assert.equal(b.inbox.length, delivered + 1);
    } finally {
      await closeAll(nodes);
    }
  });
});

describe('stream sender', () => {
  it('rotates streams (by time and by size) without losing or reordering messages', async () => {
    for (const extra of [{ streamRotateMs: 60 }, { streamRotateBytes: 3000 }]) {
      const nodes = await startNodes(['n1', 'n2'], { ...extra, maxQueueMessages: 100_000 });
      const [a, b] = nodes as [Node, Node];
      try {
        const total = 4000;
        const started = Date.now();
        for (let i = 0; i < total; i += 20) {
          a.t.send(range(i, 20).map((c) => hb('n1', 'n2', c)));
          // spread over ~half a second, so that time rotation happens several times
          await new Promise((r) => setTimeout(r, i % 200 === 0 ? 10 : 0));
        }
        await waitFor(() => b.inbox.length === total, `${total} messages (${JSON.stringify(extra)})`, 15_000);
        assert.deepEqual(ctxs(b.inbox), range(0, total));
        assert.deepEqual(a.t.stats().dropped, {});
        assert.ok(a.t.stats().streams.ok >= 3, `rotated: ${JSON.stringify(a.t.stats().streams)} in ${Date.now() - started} ms`);
        assert.equal(a.t.stats().streams.failed + a.t.stats().streams.rejected, 0);
        assert.deepEqual(b.t.stats().rejected, {});
      } finally {
        await closeAll(nodes);
      }
    }
  });

  it('closes an idle stream and opens a new one on demand', async () => {
    const nodes = await startNodes(['n1', 'n2'], { streamIdleMs: 50 });
    const [a, b] = nodes as [Node, Node];
    try {
      a.t.send([hb('n1', 'n2', 1)]);
      await waitFor(() => a.t.stats().streams.ok === 1, 'the idle stream ended with 204');
      assert.deepEqual(ctxs(b.inbox), [1]);
      a.t.send([hb('n1', 'n2', 2)]);
      await waitFor(() => b.inbox.length === 2 && a.t.stats().streams.ok === 2, 'a new stream, idle again');
      assert.equal(a.t.stats().sent, 2);
    } finally {
      await closeAll(nodes);
    }
  });

  it('a stream to a peer that restarts: unreachable, then messages flow again on a new stream', async () => {
    const nodes = await startNodes(['n1', 'n2'], { backoffMinMs: 5, backoffMaxMs: 50 });
    const [a, b] = nodes as [Node, Node];
    let c: HttpTransport | null = null;
    try {
      a.t.send([hb('n1', 'n2', 1)]);
      await waitFor(() => b.inbox.length === 1, 'first delivery (the stream is open now)');
      const port = b.t.address().port;
      await b.t.close(); // kills the open stream under the sender
      await waitFor(() => a.unreachable.length >= 1 && a.t.stats().streams.failed >= 1, 'the broken stream seen');
      c = new HttpTransport({ self: 'n2', cluster: 'test', listen: { host: '127.0.0.1', port }, peers: new Map([['n1', a.url]]), logger: captureLogger() });
      const inbox: Message[] = [];
      c.onMessage((m) => inbox.push(m));
      await c.start();
      let ctx = 100;
      await waitFor(() => {
        a.t.send([hb('n1', 'n2', ctx++)]);
        return inbox.length > 0;
      }, 'delivery after restart');
      // from then on, nothing is lost
      const first = ctxs(inbox)[0]!;
      await waitFor(() => ctxs(inbox).at(-1) === ctx - 1, 'the rest arrives');
      assert.deepEqual(ctxs(inbox), range(first, ctx - first));
    } finally {
      await closeAll(nodes);
      await c?.close();
    }
  });

  it('a stalled receiver: writes stop, the queue drops oldest and stays bounded, close() is prompt', async () => {
    const stall = await stalledServer();
    const port = stall.port;
    const t = new HttpTransport({
      self: 'n1', cluster: 'test', listen: { host: '127.0.0.1', port: 0 }, peers: new Map([['n2', `http://127.0.0.1:${port}`]]), logger: captureLogger(),
      maxQueueMessages: 200, requestTimeoutMs: 20_000,
    });
    await t.start();
    try {
      const data = new Uint8Array(8192);
      let offered = 0;
      const heapBefore = process.memoryUsage().heapUsed;
      // ~160 MiB offered, far more than any socket buffer
      for (let i = 0; i < 20_000; i += 100) {
        t.send(range(i, 100).map((j) => append(j, data)));
        offered += 100;
        await new Promise((r) => setImmediate(r));
        assert.ok(t.queueLength('n2') <= 200, `queue bounded (${t.queueLength('n2')})`);
      }
      const s = t.stats();
      assert.ok((s.dropped.queue_full ?? 0) > 10_000, `drop-oldest did the work: ${JSON.stringify(s.dropped)}`);
      assert.ok(s.bytesSent < 48 * 2 ** 20, `writes stopped at the full socket (${s.bytesSent} bytes went out)`);
      assert.ok(s.sent + (s.dropped.queue_full ?? 0) + t.queueLength('n2') <= offered);
      assert.ok(process.memoryUsage().heapUsed - heapBefore < 64 * 2 ** 20, 'no unbounded buffering in the sender');
      const closing = Date.now();
      await t.close();
      assert.ok(Date.now() - closing < 1000, `close() took ${Date.now() - closing} ms`);
      // every message is accounted for: sent (taken by the kernel), dropped oldest, or
      // discarded by close() (queued, or written but never taken)
      const e = t.stats();
      assert.equal(e.sent + (e.dropped.queue_full ?? 0) + (e.dropped.closed ?? 0), offered);
    } finally {
      await t.close();
      await stall.close();
    }
  });

  it('a receiver that takes nothing for requestTimeoutMs: the stream is given up and the peer reported unreachable', async () => {
    const stall = await stalledServer();
    const port = stall.port;
    const t = new HttpTransport({
      self: 'n1', cluster: 'test', listen: { host: '127.0.0.1', port: 0 }, peers: new Map([['n2', `http://127.0.0.1:${port}`]]), logger: captureLogger(),
      maxQueueMessages: 200, requestTimeoutMs: 300, backoffMinMs: 1000, backoffMaxMs: 1000,
    });
    const unreachable: string[] = [];
    t.onUnreachable((p) => unreachable.push(p));
    await t.start();
    try {
      const data = new Uint8Array(65536);
      await waitFor(() => {
        t.send(range(0, 50).map((j) => append(j, data)));
        return t.stats().streams.failed >= 1;
      }, 'the stalled stream given up');
      assert.deepEqual(unreachable, ['n2']);
      assert.ok((t.stats().dropped.send_failed ?? 0) > 0, 'what was written but not taken is counted as failed');
    } finally {
      await t.close();
      await stall.close();
    }
  });

  it('close() with open streams is prompt and leaves no sockets behind', async () => {
    const sockets = (): number => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap' || r === 'TCPServerWrap').length;
    // handles of earlier tests are released a little after their close() resolved
    await waitFor(() => sockets() === 0, 'no sockets from earlier tests', 2_000);
    const nodes = await startNodes(['n1', 'n2', 'n3']);
    try {
      for (const n of nodes) for (const m of nodes) if (n !== m) n.t.send([hb(n.id, m.id, 1)]);
      await waitFor(() => nodes.every((n) => n.inbox.length === 2), 'six streams open');
      assert.ok(sockets() >= 3 + 6 * 2, `3 servers, 6 streams with 2 ends each: ${sockets()}`);
      const started = Date.now();
      await closeAll(nodes);
      assert.ok(Date.now() - started < 1000, `close() took ${Date.now() - started} ms`);
      await waitFor(() => sockets() === 0, `sockets closed (${sockets()} left)`, 2_000);
    } finally {
      await closeAll(nodes);
    }
  });

  it('falls back to one POST per batch for a peer without the stream route', async () => {
    const got: number[] = [];
    const old = http.createServer((req, res) => {
      // like a node from before streams: unknown route → 404 at once, body unread
      if (req.url !== MESSAGES_PATH) return void res.writeHead(404, { connection: 'close' }).end();
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const r = decodeEnvelope(Buffer.concat(parts), { cluster: 'test', self: 'n2', knownPeers: new Set(['n1']), maxEntries: 10, maxBytes: 1 << 20 });
        if (r.ok) got.push(...ctxs(r.messages));
        res.writeHead(r.ok ? 204 : 400).end();
      });
    });
    await new Promise<void>((r) => old.listen(0, '127.0.0.1', r));
    const log = captureLogger();
    const t = new HttpTransport({ self: 'n1', cluster: 'test', listen: { host: '127.0.0.1', port: 0 }, peers: new Map([['n2', `http://127.0.0.1:${(old.address() as { port: number }).port}`]]), logger: log, backoffMinMs: 5 });
    await t.start();
    try {
      t.send([hb('n1', 'n2', 1)]);
      await waitFor(() => log.lines.some((l) => /falling back/.test(l.msg ?? '')), 'the fallback');
      t.send([hb('n1', 'n2', 2), hb('n1', 'n2', 3)]);
      await waitFor(() => got.includes(3), 'delivery by POST');
      assert.deepEqual(got, [2, 3], 'the first frame went down with the refused stream');
      assert.equal(t.stats().streams.rejected, 1);
    } finally {
      await t.close();
      old.closeAllConnections();
      await new Promise((r) => old.close(r));
    }
  });
});
