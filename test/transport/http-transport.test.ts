import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { request } from 'undici';
import type { Message } from '../../src/raft/core/types.js';
import { HttpTransport } from '../../src/transport/http-transport.js';
import { encodeEnvelope } from '../../src/transport/codec.js';
import { CONTENT_TYPE, MESSAGES_PATH } from '../../src/transport/peer-server.js';
import { captureLogger, closeAll, deadPort, hb, startNodes as startNodesOf, waitFor, type Extra, type Node } from './helpers.js';

const every = (from: string, to: string): Message[] => [
  { from, to, term: 3, type: 'vote', lastIndex: 10, lastTerm: 2 },
  { from, to, term: 3, type: 'preVote', lastIndex: 10, lastTerm: 3 },
  { from, to, term: 3, type: 'voteResp', reject: false },
  { from, to, term: 3, type: 'preVoteResp', reject: true },
  { from, to, term: 3, type: 'append', prevIndex: 4, prevTerm: 1, commit: 4, entries: [{ index: 5, term: 2, kind: 'noop', data: new Uint8Array() }, { index: 6, term: 3, kind: 'normal', data: new Uint8Array([1, 2, 3]) }] },
  { from, to, term: 3, type: 'appendResp', index: 7, reject: true, hint: 5, hintTerm: 2 },
  { from, to, term: 3, type: 'heartbeat', commit: 7, ctx: 42 },
  { from, to, term: 3, type: 'heartbeatResp', ctx: 42 },
  { from, to, term: 3, type: 'timeoutNow' },
];

/** the sender noticed the peer's refusal: with POST the batch is counted as rejected; on a
 *  stream the frame was already written (counted as sent) and the stream ends refused */
function refusalSeen(t: HttpTransport, streaming: boolean): boolean {
  return streaming ? t.stats().streams.rejected >= 1 : (t.stats().dropped.rejected_by_peer ?? 0) === 1;
}

// every test of the sending side runs over a stream (the default) and over POST per batch
for (const streaming of [true, false]) {
  const mode = streaming ? 'stream' : 'POST per batch';
  const startNodes = (ids: string[], extra: Extra | ((id: string) => Extra) = {}, cluster = 'test') =>
    startNodesOf(ids, (id) => ({ streaming, ...(typeof extra === 'function' ? extra(id) : extra) }), cluster);

  describe(`HttpTransport between two real nodes on loopback (${mode})`, () => {
    it('delivers every message type, both ways, and counts them in metrics', async () => {
      const registry = new Registry();
      const nodes = await startNodes(['n1', 'n2'], (id) => (id === 'n1' ? { registry } : {}));
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      try {
        a.t.send(every('n1', 'n2'));
        b.t.send(every('n2', 'n1'));
        await waitFor(() => a.inbox.length === 9 && b.inbox.length === 9, 'both inboxes');
        assert.deepStrictEqual(b.inbox, every('n1', 'n2'));
        assert.deepStrictEqual(a.inbox, every('n2', 'n1'));
        await waitFor(() => a.t.stats().sent === 9, 'sent count');
        const text = await registry.metrics();
        assert.match(text, /raftlock_transport_messages_sent_total\{peer="n2"\} 9/);
        assert.match(text, /raftlock_transport_messages_received_total\{peer="n2"\} 9/);
        assert.match(text, /raftlock_transport_bytes_sent_total\{peer="n2"\} \d{3,}/);
      } finally {
        await closeAll(nodes);
      }
    });

    it('keeps per-peer order over many batches and pipelined requests', async () => {
      const nodes = await startNodes(['n1', 'n2'], { maxQueueMessages: 100_000, maxBatchMessages: 50 });
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      try {
        const total = 20_000;
        for (let i = 0; i < total; i += 500) {
          a.t.send(Array.from({ length: 500 }, (_, j) => hb('n1', 'n2', i + j)));
          await new Promise((r) => setImmediate(r)); // let flushes interleave with sends
        }
        await waitFor(() => b.inbox.length === total, `${total} messages`, 20_000);
        const ctx = b.inbox.map((m) => (m.type === 'heartbeat' ? m.ctx : -1));
        assert.deepEqual(ctx, Array.from({ length: total }, (_, i) => i));
        assert.deepEqual(a.t.stats().dropped, {});
      } finally {
        await closeAll(nodes);
      }
    });

    it('streams a multi-chunk snapshot and reports success to the sender', async () => {
      const nodes = await startNodes(['n1', 'n2'], { snapshotChunkBytes: 4096 });
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      try {
        const data = new Uint8Array(50_000);
        for (let i = 0; i < data.length; i++) data[i] = (i * 31 + 7) & 0xff;
        const snap: Message = { from: 'n1', to: 'n2', term: 4, type: 'snapshot', snapshot: { meta: { index: 1000, term: 3, conf: { voters: ['n1', 'n2'], learners: [] } }, data } };
        a.t.send([snap, hb('n1', 'n2', 1, 4)]);
        await waitFor(() => a.snapshotStatus.length === 1, 'snapshot status');
        assert.deepEqual(a.snapshotStatus, [['n2', true]]);
        await waitFor(() => b.inbox.length === 2, 'snapshot + heartbeat delivered');
        const got = b.inbox.find((m) => m.type === 'snapshot');
        assert.deepStrictEqual(got, snap);
        assert.equal(b.t.stats().snapshotsReceived, 1);
        assert.ok(a.t.stats().bytesSent > data.length, '13 chunks went out');
        assert.equal(a.t.stats().snapshotsSent.ok, 1);
      } finally {
        await closeAll(nodes);
      }
    });

    it('an empty snapshot is one chunk; an over-limit snapshot fails without being sent', async () => {
      const nodes = await startNodes(['n1', 'n2'], { maxSnapshotBytes: 1000 });
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      try {
        const meta = { index: 5, term: 1, conf: { voters: ['n1'], learners: [] } };
        a.t.send([{ from: 'n1', to: 'n2', term: 1, type: 'snapshot', snapshot: { meta, data: new Uint8Array() } }]);
        await waitFor(() => a.snapshotStatus.length === 1, 'first status');
        a.t.send([{ from: 'n1', to: 'n2', term: 1, type: 'snapshot', snapshot: { meta, data: new Uint8Array(1001) } }]);
        await waitFor(() => a.snapshotStatus.length === 2, 'second status');
        assert.deepEqual(a.snapshotStatus, [['n2', true], ['n2', false]]);
        assert.equal(b.inbox.length, 1);
        assert.equal(a.log.lines.some((l) => l.level === 'error' && /maxSnapshotBytes/.test(l.msg ?? '')), true);
      } finally {
        await closeAll(nodes);
      }
    });

    it('refuses a peer from another cluster (403) and the sender counts the drop', async () => {
      const a = (await startNodes(['n1'], {}, 'blue'))[0]!;
      const b = (await startNodes(['n2'], {}, 'green'))[0]!;
      try {
        const peers = new Map([['n1', a.url], ['n2', b.url]]);
        a.t.setPeers(peers);
        b.t.setPeers(peers);
        a.t.send([hb('n1', 'n2', 1)]);
        await waitFor(() => refusalSeen(a.t, streaming), 'rejection seen by sender');
        assert.equal(b.inbox.length, 0);
        assert.equal(b.t.stats().rejected.cluster, 1);
        assert.ok(b.log.lines.some((l) => l.level === 'warn' && /rejected/.test(l.msg ?? '')));
      } finally {
        await closeAll([a, b]);
      }
    });

    it('authenticate hook: refused requests get 401 and are not delivered', async () => {
      const nodes = await startNodes(['n1', 'n2'], (id) => ({
        headers: { 'x-cluster-secret': id === 'n1' ? 'wrong' : 's3cret' },
        authenticate: (req) => req.headers['x-cluster-secret'] === 's3cret',
      }));
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      try {
        a.t.send([hb('n1', 'n2', 1)]);
        b.t.send([hb('n2', 'n1', 2)]);
        await waitFor(() => a.inbox.length === 1 && refusalSeen(a.t, streaming), 'one accepted, one refused');
        assert.equal(b.inbox.length, 0);
        assert.equal(b.t.stats().rejected.unauthenticated, 1);
      } finally {
        await closeAll(nodes);
      }
    });

    it('setPeers: a removed peer is no longer sent to, nor accepted from', async () => {
      const nodes = await startNodes(['n1', 'n2']);
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      try {
        b.t.setPeers(new Map([['n2', b.url]]));
        b.t.send([hb('n2', 'n1', 1)]);
        assert.equal(b.t.stats().dropped.unknown_peer, 1);
        a.t.send([hb('n1', 'n2', 1)]);
        await waitFor(() => (b.t.stats().rejected.unknown_peer ?? 0) === 1, 'n2 refuses n1');
        assert.equal(b.inbox.length, 0);
        // and back
        b.t.setPeers(new Map([['n1', a.url], ['n2', b.url]]));
        a.t.send([hb('n1', 'n2', 2)]);
        await waitFor(() => b.inbox.length === 1, 'accepted again');
      } finally {
        await closeAll(nodes);
      }
    });

    it('send never throws: self, unknown peers, foreign senders, after close', async () => {
      const nodes = await startNodes(['n1']);
      const a = nodes[0]!;
      a.t.send([hb('n1', 'n1', 1), hb('n1', 'zz', 1), hb('n9', 'n1', 1)]);
      assert.equal(a.t.stats().dropped.unknown_peer, 3);
      await closeAll(nodes);
      a.t.send([hb('n1', 'n2', 1)]);
      assert.equal(a.t.stats().dropped.closed, 1);
      await a.t.close(); // idempotent
    });

    it('rejects a body over maxBodyBytes with 413 before reading it all', async () => {
      const nodes = await startNodes(['n1', 'n2'], { maxBodyBytes: 64 * 1024 });
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      try {
        const big: Message = { from: 'n2', to: 'n1', term: 1, type: 'append', prevIndex: 0, prevTerm: 0, commit: 0, entries: [{ index: 1, term: 1, kind: 'normal', data: new Uint8Array(100_000) }] };
        const body = encodeEnvelope({ cluster: 'test', from: 'n2', to: 'n1', messages: [big] });
        const res = await request(`${a.url}${MESSAGES_PATH}`, { method: 'POST', body, headers: { 'content-type': CONTENT_TYPE } });
        await res.body.dump();
        assert.equal(res.statusCode, 413);
        assert.equal(a.t.stats().rejected.too_large, 1);
        // the sending side never even tries: one message over the batch limit is dropped
        b.t.send([big]);
        assert.equal(b.t.stats().dropped.too_large, 1);
      } finally {
        await closeAll(nodes);
      }
    });
  });

  /** n2 stops; once n1 has found it unreachable, n2 starts again on the same port (put in
   *  `started` before it starts, for the test to close): the new n2 and what it receives */
  async function restartN2(a: Node, b: Node, started: HttpTransport[]): Promise<{ c: HttpTransport; inbox: Message[] }> {
    const port = b.t.address().port;
    await b.t.close();
    a.t.send([hb('n1', 'n2', 1)]);
    await waitFor(() => a.unreachable.length >= 1, 'unreachable after n2 stopped');
    const c = new HttpTransport({ self: 'n2', cluster: 'test', listen: { host: '127.0.0.1', port }, peers: new Map([['n1', a.url]]), logger: captureLogger(), streaming });
    started.push(c);
    const inbox: Message[] = [];
    c.onMessage((m) => inbox.push(m));
    await c.start();
    return { c, inbox };
  }

  describe(`HttpTransport with a dead peer (${mode})`, () => {
    it('reports unreachable (rate-limited), backs off, and keeps its queue bounded', async () => {
      const log = captureLogger();
      const port = await deadPort();
      const t = new HttpTransport({
        self: 'n1', cluster: 'test', listen: { host: '127.0.0.1', port: 0 }, peers: new Map([['n2', `http://127.0.0.1:${port}`]]), logger: log,
        maxQueueMessages: 100, maxQueueBytes: 1 << 20, unreachableIntervalMs: 100, backoffMinMs: 5, backoffMaxMs: 20, requestTimeoutMs: 1000, streaming,
      });
      const unreachable: number[] = [];
      t.onUnreachable((p) => {
        assert.equal(p, 'n2');
        unreachable.push(Date.now());
      });
      await t.start();
      const started = Date.now();
      try {
        const payload = new Uint8Array(1024);
        let sent = 0;
        // keep sending ~1 KiB appends until three unreachable reports have come in
        while (unreachable.length < 3) {
          if (Date.now() - started > 10_000) throw new Error('no unreachable reports within 10 s');
          t.send(Array.from({ length: 1000 }, (_, i) => ({ from: 'n1', to: 'n2', term: 1, type: 'append', prevIndex: sent + i, prevTerm: 1, commit: 0, entries: [{ index: sent + i + 1, term: 1, kind: 'normal', data: payload }] }) as Message));
          sent += 1000;
          assert.ok(t.queueLength('n2') <= 100, `queue bounded (${t.queueLength('n2')})`);
          await new Promise((r) => setTimeout(r, 2));
        }
        const elapsed = Date.now() - started;
        // rate limit: at most one report per 100 ms (plus the first)
        assert.ok(unreachable.length <= elapsed / 100 + 1, `${unreachable.length} reports in ${elapsed} ms`);
        for (let i = 1; i < unreachable.length; i++) assert.ok(unreachable[i]! - unreachable[i - 1]! >= 95);
        const s = t.stats();
        assert.equal(s.unreachable, unreachable.length);
        const dropped = (s.dropped.queue_full ?? 0) + (s.dropped.send_failed ?? 0);
        assert.equal(dropped + t.queueLength('n2'), sent, 'every message is either queued or counted as dropped');
        assert.ok((s.dropped.queue_full ?? 0) > 0);
        const left = t.queueLength('n2');
        await t.close();
        assert.ok((t.stats().dropped.closed ?? 0) >= left, 'close() counts what it discards');
      } finally {
        await t.close();
      }
    });

    it('a snapshot to a dead peer reports failure', async () => {
      const port = await deadPort();
      const t = new HttpTransport({ self: 'n1', cluster: 'test', listen: { host: '127.0.0.1', port: 0 }, peers: new Map([['n2', `http://127.0.0.1:${port}`]]), logger: captureLogger() });
      const status: boolean[] = [];
      t.onSnapshotStatus((_p, ok) => status.push(ok));
      await t.start();
      try {
        const meta = { index: 5, term: 1, conf: { voters: ['n1'], learners: [] } };
        t.send([{ from: 'n1', to: 'n2', term: 1, type: 'snapshot', snapshot: { meta, data: new Uint8Array(10) } }]);
        await waitFor(() => status.length === 1, 'snapshot status');
        assert.deepEqual(status, [false]);
      } finally {
        await t.close();
      }
    });

    it('recovers when the peer comes back', async () => {
      const nodes = await startNodes(['n1', 'n2'], { backoffMinMs: 5, backoffMaxMs: 50 });
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      const started: HttpTransport[] = [];
      try {
        const { inbox } = await restartN2(a, b, started);
        await waitFor(() => {
          a.t.send([hb('n1', 'n2', 2)]);
          return inbox.length > 0;
        }, 'delivery after restart');
      } finally {
        await closeAll(nodes);
        for (const c of started) await c.close();
      }
    });

    it('a peer that comes back and sends is retried at once, not after the backoff', async () => {
      // the backoff after one refused connection is 1–2 s (jittered half of 2 s); hearing
      // from the peer must cut it short (a restarted cluster, docs/recovery.md)
      const nodes = await startNodes(['n1', 'n2'], { backoffMinMs: 2000, backoffMaxMs: 2000 });
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      const started: HttpTransport[] = [];
      try {
        const { c, inbox } = await restartN2(a, b, started);
        const t0 = Date.now();
        c.send([hb('n2', 'n1', 2)]);
        await waitFor(() => a.inbox.length > 0, 'n2 reaching n1');
        a.t.send([hb('n1', 'n2', 3)]);
        await waitFor(() => inbox.some((m) => m.type === 'heartbeat' && m.ctx === 3), 'n1 reaching n2 again', 5000);
        const ms = Date.now() - t0;
        assert.ok(ms < 900, `n1's message reached the restarted n2 ${ms} ms after n2 spoke (the backoff was at least 1000 ms)`);
      } finally {
        await closeAll(nodes);
        for (const c of started) await c.close();
      }
    });
  });

}

describe('HttpTransport inbound memory bound', () => {
  it('refuses with 503 once request bodies buffered at once exceed maxBufferedBytes', async () => {
    const { connect } = await import('node:net');
    const nodes = await startNodesOf(['n1'], { maxBodyBytes: 256 * 1024, snapshotChunkBytes: 16 * 1024, maxBufferedBytes: 300 * 1024 });
    const a = nodes[0]!;
    const port = a.t.address().port;
    const sockets: import('node:net').Socket[] = [];
    try {
      // two senders that each stall after 200 KiB of a 256 KiB body
      const answers = Array.from({ length: 2 }, () => {
        const s = connect(port, '127.0.0.1');
        sockets.push(s);
        let text = '';
        s.on('data', (d) => (text += d.toString('latin1')));
        s.on('error', () => undefined);
        s.write(`POST ${MESSAGES_PATH} HTTP/1.1\r\nhost: x\r\ncontent-type: ${CONTENT_TYPE}\r\ncontent-length: ${256 * 1024}\r\n\r\n`);
        s.write(Buffer.alloc(200 * 1024, 1));
        return () => text;
      });
      await waitFor(() => answers.some((t) => t().startsWith('HTTP/1.1 503')), 'a 503 for the second body');
      assert.equal(answers.filter((t) => t() !== '').length, 1, 'the first body is still being received');
      assert.equal(a.t.stats().rejected.busy, 1);
      assert.throws(() => new HttpTransport({ self: 'x', cluster: 'c', listen: { host: '127.0.0.1', port: 0 }, peers: new Map(), logger: captureLogger(), maxBodyBytes: 1000, maxBufferedBytes: 999 }), /maxBufferedBytes/);
    } finally {
      for (const s of sockets) s.destroy();
      await closeAll(nodes);
    }
  });
});
